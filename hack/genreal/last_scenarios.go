package main

import (
	"fmt"
	"strings"
	"time"
)

func lastScenarios() []*scenario {
	var out []*scenario
	// rancher#31456: the cluster agent of an imported cluster cannot connect: Rancher's certificate
	// is signed by a CA the agent was not given.
	for _, positive := range []bool{true, false} {
		const src = "https://github.com/rancher/rancher/issues/31456"
		var s *scenario
		img := "rancher/rancher-agent:v2.5.5"
		name := "cattle-cluster-agent-7f6b9c5d8-2kq9x"
		line := `Get "https://rancher.corp.example/ping": x509: certificate signed by unknown authority`
		var log strings.Builder
		t := ago(4 * time.Minute)
		log.WriteString(logrus(t, "info", "Rancher agent version v2.5.5 is starting"))
		log.WriteString(logrus(t.Add(time.Second), "info", "Listening on /tmp/log.sock"))
		p := pod{ns: "cattle-system", name: name, ownerKind: "ReplicaSet", owner: "cattle-cluster-agent-7f6b9c5d8", node: "imp-1-worker-1", created: ago(3 * time.Hour),
			labels: map[string]string{"app": "cattle-cluster-agent", "pod-template-hash": "7f6b9c5d8"}, containers: []obj{container("cluster-register", img, nil)}}
		if positive {
			s = newScenario("agent/real-rancher31456-cluster-agent-unknown-ca-positive", src, `
An imported cluster's cattle-cluster-agent restarts every few minutes: its connection to Rancher
fails with "x509: certificate signed by unknown authority" because Rancher runs behind a
certificate from a private CA the agent was not given (cacerts setting empty).`)
			s.expect.RootCauses = []string{"agent/tls"}
			s.expect.Forbid = []string{"cluster/clock-skew", "agent/api-unreachable", "fleet/registration-broken"}
			log.WriteString(logrus(t.Add(2*time.Second), "fatal", line))
			p.statuses = []obj{waiting("cluster-register", img, "CrashLoopBackOff", "back-off 5m0s restarting failed container=cluster-register pod="+name+"_cattle-system("+uid(name)+")", 31, terminated("Error", 1, t, t.Add(2*time.Second)))}
			p.phase, p.conditions = "Running", podConds(false, t.Add(2*time.Second))
			s.logs["logs/cattle-system/"+name+"/cluster-register.previous.log"] = log.String()
		} else {
			s = newScenario("agent/real-rancher31456-cluster-agent-unknown-ca-healthy", src, `
Look-alike after the CA was added to Rancher's cacerts setting: the agent restarted once with the
checksum of the new CA and has been connected for 3 hours.`)
			s.expect.Forbid = []string{"agent/tls", "pod/crashloop"}
			s.expect.MaxSeverity = "info"
			log.Reset()
			start := ago(3 * time.Hour)
			log.WriteString(logrus(start, "info", "Rancher agent version v2.5.5 is starting"))
			log.WriteString(logrus(start.Add(time.Second), "info", "Connecting to wss://rancher.corp.example/v3/connect/register with token starting with 8gq"))
			log.WriteString(logrus(start.Add(2*time.Second), "info", "Connecting to proxy"))
			log.WriteString(logrus(start.Add(3*time.Second), "info", "Starting user controllers"))
			p.statuses = []obj{running("cluster-register", img, start, 1, terminated("Error", 1, start.Add(-3*time.Minute), start.Add(-2*time.Minute)))}
			p.phase, p.conditions = "Running", podConds(true, start)
			s.logs["logs/cattle-system/"+name+"/cluster-register.log"] = log.String()
		}
		s.cluster("imp-1", "downstream")
		s.add("cattle-system/pods.yaml", p.object())
		out = append(out, s)
	}
	// helm#10720: an operator upgrade through Helm fails in its post-upgrade hook Job.
	for _, positive := range []bool{true, false} {
		const src = "https://github.com/helm/helm/issues/10720"
		var s *scenario
		hist := []helmRelease{
			{name: "rancher-monitoring", ns: "cattle-monitoring-system", rev: 3, status: "deployed", description: "Upgrade complete", chart: "rancher-monitoring", version: "103.0.3+up45.31.1", app: "v0.65.1", first: ago(300 * 24 * time.Hour), last: ago(30 * 24 * time.Hour)},
			{name: "rancher-monitoring", ns: "cattle-monitoring-system", rev: 4, status: "failed", description: "Upgrade \"rancher-monitoring\" failed: post-upgrade hooks failed: job failed: BackoffLimitExceeded", chart: "rancher-monitoring", version: "104.1.0+up57.0.3", app: "v0.72.0", first: ago(300 * 24 * time.Hour), last: ago(2 * time.Hour)},
		}
		if positive {
			s = newScenario("helm/real-helm10720-post-upgrade-hook-positive", src, `
The monitoring upgrade failed 2 hours ago in its post-upgrade hook ("post-upgrade hooks failed:
job failed: BackoffLimitExceeded"); revision 4 is failed and the operator runs half-upgraded.`)
			s.expect.RootCauses = []string{"helm/release-failed"}
			s.expect.Forbid = []string{"helm/release-pending", "helm/no-deployed-release", "suc/job-deadline"}
			hist[0].status = "superseded"
		} else {
			s = newScenario("helm/real-helm10720-post-upgrade-hook-healthy", src, `
Look-alike: the hook Job failed once and was retried by a second upgrade, deployed 90 minutes
ago; the failed revision 4 stays in the history.`)
			s.expect.Forbid = []string{"helm/release-failed", "helm/release-pending"}
			s.expect.MaxSeverity = "info"
			hist[0].status = "superseded"
			hist = append(hist, helmRelease{name: "rancher-monitoring", ns: "cattle-monitoring-system", rev: 5, status: "deployed", description: "Upgrade complete", chart: "rancher-monitoring", version: "104.1.0+up57.0.3", app: "v0.72.0", first: ago(300 * 24 * time.Hour), last: ago(90 * time.Minute)})
		}
		s.cluster("mon-1", "downstream")
		var secrets []obj
		for _, r := range hist {
			secrets = append(secrets, r.object())
		}
		s.add("cattle-monitoring-system/secrets.yaml", secrets...)
		out = append(out, s)
	}
	// rancher#16722: after the Rancher upgrade the cattle-node-agent DaemonSet stays "updating":
	// its pod on one worker is stuck in removing (Terminating) for 17 hours.
	for _, positive := range []bool{true, false} {
		const src = "https://github.com/rancher/rancher/issues/16722"
		var s *scenario
		img := "rancher/rancher-agent:v2.1.1"
		p := pod{ns: "cattle-system", name: "cattle-node-agent-5wtrt", ownerKind: "DaemonSet", owner: "cattle-node-agent", node: "custom-worker-2", created: ago(30 * 24 * time.Hour),
			labels: map[string]string{"app": "cattle-agent", "controller-revision-hash": "7c9d8f6b5"}, containers: []obj{container("agent", img, nil)},
			statuses: []obj{running("agent", img, ago(30*24*time.Hour), 1, nil)}, phase: "Running", conditions: podConds(true, ago(30*24*time.Hour)), grace: 30}
		if positive {
			s = newScenario("pod/real-rancher16722-node-agent-removing-positive", src, `
Rancher 2.1.1 -> 2.1.2: the cattle-node-agent DaemonSet has been "updating" since the upgrade;
its old pod on custom-worker-2 was deleted 17 hours ago and is still Terminating on a Ready
node, so the new agent never starts there.`)
			s.expect.RootCauses = []string{"pod/terminating-stuck"}
			s.expect.Forbid = []string{"pod/crashloop"}
			p.deleted = ago(17 * time.Hour).Add(30 * time.Second)
		} else {
			s = newScenario("pod/real-rancher16722-node-agent-removing-healthy", src, `
Look-alike: the DaemonSet rolling its pods one node at a time, the old pod on custom-worker-2
deleted 10 seconds ago and within its grace period.`)
			s.expect.Forbid = []string{"pod/terminating-stuck"}
			s.expect.MaxSeverity = "info"
			p.deleted = ago(10 * time.Second).Add(30 * time.Second)
		}
		p.ownerKind = "DaemonSet"
		po := p.object()
		po["metadata"].(obj)["ownerReferences"].([]obj)[0]["apiVersion"] = "apps/v1"
		s.cluster("custom-1", "downstream")
		s.add("cattle-system/pods.yaml", po)
		s.add("nodes.yaml", node{name: "custom-worker-2", roles: []string{"worker"}, created: ago(300 * 24 * time.Hour), kubelet: "v1.11.3", arch: "amd64", cpu: "4", mem: "8009520Ki", heartbeat: ago(15 * time.Second)}.object())
		out = append(out, s)
	}
	// fleet#4612: the UI shows some BundleDeployments as "Error" while kubectl shows them Ready.
	{
		const src = "https://github.com/rancher/fleet/issues/4612"
		s := newScenario("fleet/real-fleet4612-ui-error-ready-healthy", src, `
Look-alike of an ErrApplied bundle: Rancher's UI lists several BundleDeployments as "Error"
with "no detailed error", but their objects say Ready (Deployed, Ready and Monitored True,
appliedDeploymentID current). A display problem, nothing to report.`)
		s.expect.Forbid = []string{"fleet/bundle-err-applied", "fleet/bundle-not-ready", "fleet/bundle-wait-applied-stuck", "fleet/bundle-modified"}
		s.expect.MaxSeverity = "info"
		s.cluster("local", "management")
		var bds []bundleDeployment
		for i, b := range []string{"charts-redis", "charts-cert-manager", "charts-external-dns", "charts-loki"} {
			bds = append(bds, bundleDeployment{cluster: localCluster, bundle: b, bundleNS: "fleet-local", defaultNS: strings.TrimPrefix(b, "charts-"), created: ago(60 * 24 * time.Hour), state: "ready", at: ago(time.Duration(i+1) * 7 * time.Hour), gen: 3 + i})
		}
		s.management(nil, bds)
		out = append(out, s)
	}
	// rancher#36559: on an RKE2 cluster created with the restricted PSP, the system-agent upgrade
	// Jobs never start.
	{
		const src = "https://github.com/rancher/rancher/issues/36559"
		job := "apply-system-agent-upgrader-on-anuketest3-pool1-c82d6bdc-8f147e"
		msg := fmt.Sprintf(`Error creating: pods "%s-" is forbidden: PodSecurityPolicy: unable to admit pod: [spec.volumes[0]: Invalid value: "hostPath": hostPath volumes are not allowed to be used spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed]`, job)
		s := newScenario("workload/real-rancher36559-restricted-psp-new-cluster-positive", src, `
A new RKE2 cluster created with the "restricted" default Pod Security Policy: the system-agent
upgrade Job on its node stays In Progress without a pod, every attempt refused by the PSP.`)
		s.expect.RootCauses = []string{"workload/admission-denied"}
		s.expect.Forbid = []string{"agent/config-invalid"}
		s.cluster("anuketest3", "downstream")
		created := ago(40 * time.Minute)
		labels := map[string]string{"upgrade.cattle.io/plan": "system-agent-upgrader", "upgrade.cattle.io/node": "anuketest3-pool1-c82d6bdc", "upgrade.cattle.io/controller": "system-upgrade-controller"}
		j := obj{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta("Job", job, "cattle-system", created, labels),
			"spec": obj{"backoffLimit": 99, "completions": 1, "parallelism": 1, "template": obj{"metadata": obj{"labels": labels},
				"spec": obj{"restartPolicy": "Never", "serviceAccountName": "system-agent-upgrader", "containers": []obj{container("upgrade", "rancher/system-agent:v0.2.3-suc", nil)}}}},
			"status": obj{"startTime": ts(created)}}
		ev := event{ns: "cattle-system", kind: "Job", name: job, reason: "FailedCreate", msg: msg, first: created.Add(time.Second), last: ago(5 * time.Minute), count: 9, component: "job-controller"}.object()
		ev["involvedObject"].(obj)["apiVersion"] = "batch/v1"
		s.add("cattle-system/jobs.yaml", j)
		s.add("cattle-system/events.yaml", ev)
		out = append(out, s)
	}
	return out
}
