package main

import (
	"time"
)

func podScenarios() []*scenario {
	var out []*scenario
	// rancher#41225 then rancher#38723: the cluster agent was OOM-killed after the Rancher upgrade;
	// given a 2Gi memory request, its new pod fits on no node.
	for _, positive := range []bool{true, false} {
		const src = "https://github.com/rancher/rancher/issues/41225 and https://github.com/rancher/rancher/issues/38723"
		var s *scenario
		if positive {
			s = newScenario("pod/real-rancher41225-oom-then-insufficient-memory-positive", src, `
A chain: after the Rancher v2.7.2 upgrade the cattle-cluster-agent was OOM-killed again and
again (14 restarts); the operator raised its memory request to 2Gi, and the new ReplicaSet's
pod has been Pending for 50 minutes: "0/3 nodes are available: 3 Insufficient memory". The
unschedulable pod is what blocks the rollout now; the OOM kills stay reported.`)
			s.expect.RootCauses = []string{"pod/unschedulable-resources"}
			s.expect.Findings = []string{"pod/oom-killed"}
			s.expect.Forbid = []string{"pod/unschedulable-taints"}
		} else {
			s = newScenario("pod/real-rancher41225-oom-then-insufficient-memory-healthy", src, `
Look-alike: the same change with a request that fits. The new pod was Pending for a few seconds,
then scheduled, and has run for two minutes; the old pod is terminating within its grace period.`)
			s.expect.Forbid = []string{"pod/unschedulable-resources", "pod/oom-killed", "pod/terminating-stuck", "pod/crashloop"}
			s.expect.MaxSeverity = "info"
		}
		s.cluster("prod-us-2", "downstream")
		img := "rancher/rancher-agent:v2.7.2"
		oldReq := obj{"requests": obj{"cpu": "100m", "memory": "512Mi"}, "limits": obj{"memory": "1Gi"}}
		newReq := obj{"requests": obj{"cpu": "100m", "memory": "2Gi"}, "limits": obj{"memory": "3Gi"}}
		if !positive {
			newReq = obj{"requests": obj{"cpu": "100m", "memory": "768Mi"}, "limits": obj{"memory": "2Gi"}}
		}
		changed := ago(50 * time.Minute)
		if !positive {
			changed = ago(2*time.Minute + 20*time.Second)
		}
		oldRS, newRS := "6c9d7f8b5d", "7f4b9c6d88"
		s.add("cattle-system/deployments.yaml", deployment("cattle-system", "cattle-cluster-agent", ago(300*24*time.Hour), img, newReq, 2, true, "ReplicaSetUpdated", changed))
		s.add("cattle-system/replicasets.yaml",
			replicaSet("cattle-system", "cattle-cluster-agent", oldRS, ago(9*24*time.Hour), img, oldReq, "1", 1),
			replicaSet("cattle-system", "cattle-cluster-agent", newRS, changed, img, newReq, "2", 1))
		oldPod := pod{ns: "cattle-system", name: "cattle-cluster-agent-" + oldRS + "-x2v7q", ownerKind: "ReplicaSet", owner: "cattle-cluster-agent-" + oldRS, node: "prod-us-2-worker-1",
			created: ago(9 * 24 * time.Hour), labels: map[string]string{"app": "cattle-cluster-agent", "pod-template-hash": oldRS},
			containers: []obj{container("cluster-register", img, oldReq)}, phase: "Running"}
		newPod := pod{ns: "cattle-system", name: "cattle-cluster-agent-" + newRS + "-m4kzp", ownerKind: "ReplicaSet", owner: "cattle-cluster-agent-" + newRS,
			created: changed, labels: map[string]string{"app": "cattle-cluster-agent", "pod-template-hash": newRS},
			containers: []obj{container("cluster-register", img, newReq)}}
		msg := "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
		if positive {
			oldPod.statuses = []obj{running("cluster-register", img, ago(17*time.Minute), 14, terminated("OOMKilled", 137, ago(41*time.Minute), ago(18*time.Minute)))}
			oldPod.conditions = podConds(true, ago(17*time.Minute))
			newPod.phase, newPod.conditions = "Pending", pendingConds(changed, msg)
			s.add("cattle-system/events.yaml",
				event{ns: "cattle-system", kind: "Pod", name: newPod.name, reason: "FailedScheduling", msg: msg, first: changed, last: ago(3 * time.Minute), count: 11, component: "default-scheduler"}.object(),
				event{ns: "cattle-system", kind: "Pod", name: oldPod.name, reason: "BackOff", msg: "Back-off restarting failed container cluster-register in pod " + oldPod.name + "_cattle-system(" + uid("Pod/cattle-system/"+oldPod.name) + ")", first: ago(5 * time.Hour), last: ago(18 * time.Minute), count: 40, component: "kubelet"}.object())
		} else {
			oldPod.statuses = []obj{running("cluster-register", img, ago(9*24*time.Hour), 0, nil)}
			oldPod.conditions = podConds(true, ago(9*24*time.Hour))
			oldPod.deleted, oldPod.grace = ago(20*time.Second).Add(30*time.Second), 30
			newPod.node, newPod.phase = "prod-us-2-worker-2", "Running"
			newPod.statuses = []obj{running("cluster-register", img, changed.Add(15*time.Second), 0, nil)}
			newPod.conditions = podConds(true, changed.Add(25*time.Second))
		}
		s.add("cattle-system/pods.yaml", oldPod.object(), newPod.object())
		var ns []obj
		for i, n := range []string{"prod-us-2-cp-1", "prod-us-2-worker-1", "prod-us-2-worker-2"} {
			roles := []string{"worker"}
			if i == 0 {
				roles = []string{"control-plane", "etcd"}
			}
			ns = append(ns, node{name: n, roles: roles, created: ago(300 * 24 * time.Hour), kubelet: "v1.25.9+rke2r1", arch: "amd64", cpu: "4", mem: "3880264Ki", heartbeat: ago(30 * time.Second)}.object())
		}
		s.add("nodes.yaml", ns...)
		out = append(out, s)
	}
	return out
}

func helmScenarios() []*scenario {
	var out []*scenario
	// rancher#27475: upgrading an app fails on an immutable Service field; Helm records the
	// revision failed.
	for _, positive := range []bool{true, false} {
		const src = "https://github.com/rancher/rancher/issues/27475"
		var s *scenario
		desc := `Upgrade "pacs" failed: failed to replace object: Service "pacs" is invalid: spec.clusterIP: Invalid value: "": field is immutable`
		hist := []helmRelease{
			{name: "pacs", ns: "pacs", rev: 2, status: "superseded", description: "Upgrade complete", chart: "pacs", version: "1.3.0", app: "1.3.0", first: ago(200 * 24 * time.Hour), last: ago(40 * 24 * time.Hour)},
			{name: "pacs", ns: "pacs", rev: 3, status: "deployed", description: "Upgrade complete", chart: "pacs", version: "1.4.0", app: "1.4.0", first: ago(200 * 24 * time.Hour), last: ago(20 * 24 * time.Hour)},
			{name: "pacs", ns: "pacs", rev: 4, status: "failed", description: desc, chart: "pacs", version: "1.5.0", app: "1.5.0", first: ago(200 * 24 * time.Hour), last: ago(3 * time.Hour)},
		}
		if positive {
			s = newScenario("helm/real-rancher27475-immutable-field-positive", src, `
An app upgrade through Rancher (Helm 3) failed 3 hours ago: "failed to replace object: Service
\"pacs\" is invalid: spec.clusterIP: Invalid value: \"\": field is immutable". Revision 4 is
failed, revision 3 still serves.`)
			s.expect.RootCauses = []string{"helm/release-failed"}
			s.expect.Forbid = []string{"helm/release-pending", "helm/no-deployed-release", "api/removed", "agent/config-invalid"}
		} else {
			s = newScenario("helm/real-rancher27475-immutable-field-healthy", src, `
Look-alike after the fix (the chart stopped templating an empty clusterIP): revision 5 deployed
over the failed revision 4, which stays in the history as failed.`)
			s.expect.Forbid = []string{"helm/release-failed", "helm/release-pending", "helm/no-deployed-release"}
			s.expect.MaxSeverity = "info"
			hist[1].status = "superseded"
			hist = append(hist, helmRelease{name: "pacs", ns: "pacs", rev: 5, status: "deployed", description: "Upgrade complete", chart: "pacs", version: "1.5.1", app: "1.5.0", first: ago(200 * 24 * time.Hour), last: ago(2 * time.Hour)})
		}
		s.cluster("apps-1", "downstream")
		var secrets []obj
		for _, r := range hist {
			secrets = append(secrets, r.object())
		}
		s.add("pacs/secrets.yaml", secrets...)
		out = append(out, s)
	}
	return out
}
