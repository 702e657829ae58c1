package main

import (
	"fmt"
	"time"
)

func rsWithStatus(rs obj, have int, failure string, at time.Time) obj {
	st := obj{"replicas": have, "observedGeneration": 1}
	if have > 0 {
		st["readyReplicas"], st["availableReplicas"], st["fullyLabeledReplicas"] = have, have, have
	}
	if failure != "" {
		st["conditions"] = []obj{{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": failure, "lastTransitionTime": ts(at)}}
	}
	rs["status"] = st
	return rs
}

func admissionScenarios() []*scenario {
	var out []*scenario
	// rancher#47255: after applying cisProfile: cis (Pod Security "restricted" for every namespace),
	// the cattle-cluster-agent's new ReplicaSet cannot create its pod.
	{
		const src = "https://github.com/rancher/rancher/issues/47255"
		img := "rancher/rancher-agent:v2.9.1"
		for _, positive := range []bool{true, false} {
			var s *scenario
			newRS := "5745cc5df8"
			msg := `Error creating: pods "cattle-cluster-agent-5745cc5df8-sgbhm" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "cluster-register" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "cluster-register" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "cluster-register" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "cluster-register" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
			changed := ago(124 * time.Minute)
			if positive {
				s = newScenario("workload/real-rancher47255-podsecurity-restricted-positive", src, `
cisProfile: cis put every namespace under Pod Security "restricted": since the cluster agent's
Deployment was updated 2 hours ago, its new ReplicaSet fails to create its pod ("violates
PodSecurity \"restricted:latest\""), 43 times; the old pod still runs the previous version.`)
				s.expect.RootCauses = []string{"workload/admission-denied"}
				s.expect.Forbid = []string{"agent/config-invalid", "workload/quota-exceeded"}
			} else {
				s = newScenario("workload/real-rancher47255-podsecurity-restricted-healthy", src, `
Look-alike after cattle-system was exempted: the new ReplicaSet has its pod, running for 80
minutes; the FailedCreate events from before the exemption are still in the event list.`)
				s.expect.Forbid = []string{"workload/admission-denied"}
				s.expect.MaxSeverity = "info"
			}
			s.cluster("vsphere-1", "downstream")
			d := deployment("cattle-system", "cattle-cluster-agent", ago(300*24*time.Hour), img, nil, 3, true, "ReplicaSetUpdated", changed)
			if !positive {
				done := ago(80 * time.Minute)
				d["status"] = obj{"observedGeneration": 3, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
					"conditions": []obj{
						{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability.", "lastUpdateTime": ts(done), "lastTransitionTime": ts(done)},
						{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ReplicaSet \"cattle-cluster-agent-" + newRS + "\" has successfully progressed.", "lastUpdateTime": ts(done), "lastTransitionTime": ts(changed)},
					}}
			}
			s.add("cattle-system/deployments.yaml", d)
			oldRS := rsWithStatus(replicaSet("cattle-system", "cattle-cluster-agent", "6d8f9b7c5b", ago(40*24*time.Hour), "rancher/rancher-agent:v2.9.0", nil, "2", 1), 1, "", time.Time{})
			var nrs obj
			if positive {
				nrs = rsWithStatus(replicaSet("cattle-system", "cattle-cluster-agent", newRS, changed, img, nil, "3", 1), 0, msg, changed)
			} else {
				nrs = rsWithStatus(replicaSet("cattle-system", "cattle-cluster-agent", newRS, changed, img, nil, "3", 1), 1, "", time.Time{})
				oldRS = rsWithStatus(replicaSet("cattle-system", "cattle-cluster-agent", "6d8f9b7c5b", ago(40*24*time.Hour), "rancher/rancher-agent:v2.9.0", nil, "2", 0), 0, "", time.Time{})
			}
			s.add("cattle-system/replicasets.yaml", oldRS, nrs)
			last := ago(4 * time.Minute)
			if !positive {
				last = ago(82 * time.Minute)
			}
			ev := event{ns: "cattle-system", kind: "ReplicaSet", name: "cattle-cluster-agent-" + newRS, reason: "FailedCreate", msg: msg, first: changed, last: last, count: 43, component: "replicaset-controller"}.object()
			ev["involvedObject"].(obj)["apiVersion"] = "apps/v1"
			s.add("cattle-system/events.yaml", ev)
			if !positive {
				p := pod{ns: "cattle-system", name: "cattle-cluster-agent-" + newRS + "-q8w2n", ownerKind: "ReplicaSet", owner: "cattle-cluster-agent-" + newRS, node: "vsphere-1-worker-2", created: ago(81 * time.Minute),
					labels: map[string]string{"app": "cattle-cluster-agent", "pod-template-hash": newRS}, containers: []obj{container("cluster-register", img, nil)},
					statuses: []obj{running("cluster-register", img, ago(80*time.Minute), 0, nil)}, phase: "Running", conditions: podConds(true, ago(80*time.Minute))}
				s.add("cattle-system/pods.yaml", p.object())
			}
			out = append(out, s)
		}
	}
	// rancher#35105: the apply-system-agent-upgrader Jobs of an imported RKE2 cluster cannot
	// create their pods: a restricted PodSecurityPolicy refuses hostNetwork/hostPID/privileged.
	{
		const src = "https://github.com/rancher/rancher/issues/35105"
		for _, positive := range []bool{true, false} {
			var s *scenario
			job := "apply-system-agent-upgrader-on-rke-dev-wkr-08-with-61f21c-6b500"
			msg := fmt.Sprintf(`Error creating: pods "%s-" is forbidden: PodSecurityPolicy: unable to admit pod: [spec.securityContext.hostNetwork: Invalid value: true: Host network is not allowed to be used spec.securityContext.hostPID: Invalid value: true: Host PID is not allowed to be used spec.securityContext.hostIPC: Invalid value: true: Host IPC is not allowed to be used spec.volumes[0]: Invalid value: "hostPath": hostPath volumes are not allowed to be used spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed]`, job)
			created := ago(5 * time.Hour)
			if positive {
				s = newScenario("workload/real-rancher35105-psp-blocks-system-agent-upgrader-positive", src, `
The system-agent upgrade Job for rke-dev-wkr-08 has not created a pod in 5 hours: the cluster's
restricted PodSecurityPolicy refuses its host namespaces and privileged container ("PodSecurityPolicy:
unable to admit pod: [... Invalid value: true: Host network is not allowed to be used ...]"). An
admission denial, not an invalid agent configuration.`)
				s.expect.RootCauses = []string{"workload/admission-denied"}
				s.expect.Forbid = []string{"agent/config-invalid"}
			} else {
				s = newScenario("workload/real-rancher35105-psp-blocks-system-agent-upgrader-healthy", src, `
Look-alike after system-unrestricted-psp was bound to the upgrader's role: the Job created its
pod and completed 10 minutes ago; the FailedCreate events from before remain.`)
				s.expect.Forbid = []string{"workload/admission-denied", "agent/config-invalid"}
				s.expect.MaxSeverity = "info"
			}
			s.cluster("rke-dev", "downstream")
			labels := map[string]string{"plan.upgrade.cattle.io/system-agent-upgrader": "61f21c" + hash("psp")[:50], "upgrade.cattle.io/controller": "system-upgrade-controller",
				"upgrade.cattle.io/node": "rke-dev-wkr-08", "upgrade.cattle.io/plan": "system-agent-upgrader", "upgrade.cattle.io/version": "v0.3.6"}
			st := obj{"startTime": ts(created), "active": 0}
			if !positive {
				st = obj{"startTime": ts(created), "succeeded": 1, "completionTime": ts(ago(10 * time.Minute)),
					"conditions": []obj{{"type": "Complete", "status": "True", "lastProbeTime": ts(ago(10 * time.Minute)), "lastTransitionTime": ts(ago(10 * time.Minute))}}}
			}
			j := obj{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta("Job", job, "cattle-system", created, labels),
				"spec": obj{"backoffLimit": 99, "completions": 1, "parallelism": 1, "template": obj{"metadata": obj{"labels": labels},
					"spec": obj{"hostNetwork": true, "hostPID": true, "hostIPC": true, "restartPolicy": "Never", "serviceAccountName": "system-agent-upgrader",
						"containers": []obj{container("upgrade", "rancher/system-agent:v0.3.6-suc", nil)}}}},
				"status": st}
			s.add("cattle-system/jobs.yaml", j)
			last := ago(3 * time.Minute)
			if !positive {
				last = ago(14 * time.Minute)
			}
			ev := event{ns: "cattle-system", kind: "Job", name: job, reason: "FailedCreate", msg: msg, first: created.Add(time.Second), last: last, count: 19, component: "job-controller"}.object()
			ev["involvedObject"].(obj)["apiVersion"] = "batch/v1"
			s.add("cattle-system/events.yaml", ev)
			if !positive {
				labels2 := map[string]string{"job-name": job, "batch.kubernetes.io/job-name": job}
				for k, v := range labels {
					labels2[k] = v
				}
				p := pod{ns: "cattle-system", name: job + "-x7k2p", ownerKind: "Job", owner: job, node: "rke-dev-wkr-08", created: ago(13 * time.Minute), labels: labels2,
					containers: []obj{container("upgrade", "rancher/system-agent:v0.3.6-suc", nil)},
					statuses:   []obj{obj{"name": "upgrade", "image": "rancher/system-agent:v0.3.6-suc", "ready": false, "restartCount": 0, "state": obj{"terminated": terminated("Completed", 0, ago(12*time.Minute), ago(10*time.Minute))}}},
					phase:      "Succeeded", conditions: podConds(false, ago(10*time.Minute))}
				s.add("cattle-system/pods.yaml", p.object())
			}
			out = append(out, s)
		}
	}
	// rancher#40568: in an air-gapped setup with an authenticated registry, the fleet-agent image
	// cannot be pulled.
	{
		const src = "https://github.com/rancher/rancher/issues/40568"
		img := "registry.corp.example:5000/rancher/fleet-agent:v0.5.2-rc.3"
		ref := img
		pullMsg := fmt.Sprintf(`Failed to pull image %q: rpc error: code = Unknown desc = failed to pull and unpack image %q: failed to resolve reference %q: pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`, img, ref, ref)
		for _, positive := range []bool{true, false} {
			var s *scenario
			created := ago(35 * time.Minute)
			rsHash := hash("airgap-rs")[:10]
			name := "fleet-agent-" + rsHash + "-" + hash("airgap")[:5]
			p := pod{ns: "cattle-fleet-system", name: name, ownerKind: "ReplicaSet", owner: "fleet-agent-" + rsHash, node: "air-1-worker-1", created: created,
				labels: map[string]string{"app": "fleet-agent", "pod-template-hash": rsHash}, containers: []obj{container("fleet-agent", img, nil)}}
			var evs []obj
			if positive {
				s = newScenario("image/real-rancher40568-airgap-registry-auth-positive", src, `
Air-gapped RKE1 cluster with an authenticated private registry: the new fleet-agent pod has
been in ImagePullBackOff for 35 minutes ("pull access denied ... insufficient_scope:
authorization failed"). The registry refuses the credentials, the network is fine.`)
				s.expect.RootCauses = []string{"image/pull-auth"}
				s.expect.Forbid = []string{"image/pull-network", "image/pull-not-found", "agent/rbac-forbidden"}
				p.statuses = []obj{waiting("fleet-agent", img, "ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q", img), 0, nil)}
				p.phase, p.conditions = "Pending", podConds(false, created)
				evs = append(evs,
					event{ns: "cattle-fleet-system", kind: "Pod", name: name, reason: "Failed", msg: pullMsg, first: created.Add(5 * time.Second), last: ago(3 * time.Minute), count: 9, component: "kubelet"}.object(),
					event{ns: "cattle-fleet-system", kind: "Pod", name: name, reason: "BackOff", typ: "Normal", msg: fmt.Sprintf("Back-off pulling image %q", img), first: created.Add(30 * time.Second), last: ago(40 * time.Second), count: 140, component: "kubelet"}.object())
			} else {
				s = newScenario("image/real-rancher40568-airgap-registry-auth-healthy", src, `
Look-alike of the intermittent case in the report: the first two pulls were refused while the
registry credentials propagated, the third succeeded 31 minutes ago and the agent has run since.`)
				s.expect.Forbid = []string{"image/pull-auth", "image/pull-network", "pod/crashloop"}
				s.expect.MaxSeverity = "warning"
				p.statuses = []obj{running("fleet-agent", img, ago(31*time.Minute), 0, nil)}
				p.phase, p.conditions = "Running", podConds(true, ago(31*time.Minute))
				evs = append(evs,
					event{ns: "cattle-fleet-system", kind: "Pod", name: name, reason: "Failed", msg: pullMsg, first: created.Add(5 * time.Second), last: created.Add(25 * time.Second), count: 2, component: "kubelet"}.object(),
					event{ns: "cattle-fleet-system", kind: "Pod", name: name, reason: "Pulled", typ: "Normal", msg: fmt.Sprintf("Successfully pulled image %q in 2.113s (2.113s including waiting)", img), first: ago(31 * time.Minute), last: ago(31 * time.Minute), count: 1, component: "kubelet"}.object())
			}
			s.cluster("air-1", "downstream")
			s.add("cattle-fleet-system/pods.yaml", p.object())
			s.add("cattle-fleet-system/events.yaml", evs...)
			out = append(out, s)
		}
	}
	return out
}
