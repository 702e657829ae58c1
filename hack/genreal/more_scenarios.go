package main

import (
	"fmt"
	"time"
)

func moreScenarios() []*scenario {
	var out []*scenario
	// longhorn#11824: upgrading Longhorn through Rancher's catalog fails in its pre-upgrade hook.
	for _, positive := range []bool{true, false} {
		const src = "https://github.com/longhorn/longhorn/issues/11824"
		var s *scenario
		hist := []helmRelease{
			{name: "longhorn", ns: "longhorn-system", rev: 7, status: "superseded", description: "Upgrade complete", chart: "longhorn", version: "106.2.0+up1.8.1", app: "v1.8.1", first: ago(500 * 24 * time.Hour), last: ago(120 * 24 * time.Hour)},
			{name: "longhorn", ns: "longhorn-system", rev: 8, status: "deployed", description: "Upgrade complete", chart: "longhorn", version: "107.0.0+up1.9.0", app: "v1.9.0", first: ago(500 * 24 * time.Hour), last: ago(60 * 24 * time.Hour)},
			{name: "longhorn", ns: "longhorn-system", rev: 9, status: "failed", description: "Upgrade \"longhorn\" failed: pre-upgrade hooks failed: 1 error occurred:\n\t* job longhorn-pre-upgrade failed: BackoffLimitExceeded", chart: "longhorn", version: "107.1.0+up1.9.1", app: "v1.9.1", first: ago(500 * 24 * time.Hour), last: ago(5 * time.Hour)},
		}
		if positive {
			s = newScenario("helm/real-longhorn11824-pre-upgrade-hook-positive", src, `
Upgrading Longhorn from the Rancher catalog failed 5 hours ago: "pre-upgrade hooks failed: 1
error occurred: * job longhorn-pre-upgrade failed: BackoffLimitExceeded". Revision 9 is failed,
revision 8 still serves; the hook Job's log says why.`)
			s.expect.RootCauses = []string{"helm/release-failed"}
			s.expect.Forbid = []string{"helm/release-pending", "helm/no-deployed-release", "suc/job-deadline"}
		} else {
			s = newScenario("helm/real-longhorn11824-pre-upgrade-hook-healthy", src, `
Look-alike after the hook's precondition was fixed: revision 10 deployed an hour after the
failed revision 9, which Helm keeps in the history (history-max 5) as failed.`)
			s.expect.Forbid = []string{"helm/release-failed", "helm/release-pending", "helm/no-deployed-release"}
			s.expect.MaxSeverity = "info"
			hist[1].status = "superseded"
			hist = append(hist, helmRelease{name: "longhorn", ns: "longhorn-system", rev: 10, status: "deployed", description: "Upgrade complete", chart: "longhorn", version: "107.1.0+up1.9.1", app: "v1.9.1", first: ago(500 * 24 * time.Hour), last: ago(4 * time.Hour)})
		}
		s.cluster("storage-1", "downstream")
		var secrets []obj
		for _, r := range hist {
			secrets = append(secrets, r.object())
		}
		s.add("longhorn-system/secrets.yaml", secrets...)
		out = append(out, s)
	}
	// harvester#8309: the fleet chart's own release in cattle-fleet-system stays pending-upgrade
	// ("Preparing upgrade") and the v1.4.0 -> v1.4.1 upgrade stalls in phase 3.
	for _, positive := range []bool{true, false} {
		const src = "https://github.com/harvester/harvester/issues/8309"
		var s *scenario
		mk := func(rev int, status, desc string, at time.Time) helmRelease {
			return helmRelease{name: "fleet", ns: "cattle-fleet-system", rev: rev, status: status, description: desc, chart: "fleet", version: "103.1.5+up0.9.5", app: "0.9.5", first: ago(74 * 24 * time.Hour), last: at}
		}
		hist := []helmRelease{
			mk(1, "superseded", "Install complete", ago(74*24*time.Hour)),
			mk(2, "superseded", "Upgrade complete", ago(74*24*time.Hour-4*time.Minute)),
			mk(3, "superseded", "Upgrade complete", ago(74*24*time.Hour-100*time.Minute)),
			mk(4, "deployed", "Upgrade complete", ago(74*24*time.Hour-101*time.Minute)),
		}
		if positive {
			s = newScenario("helm/real-harvester8309-fleet-release-pending-positive", src, `
The fleet chart's release has had revision 5 pending-upgrade ("Preparing upgrade") for 72
minutes: the Helm client of Rancher's helm operation was killed mid-upgrade, so every later
upgrade of Fleet is refused and the Harvester upgrade waits in phase 3.`)
			s.expect.RootCauses = []string{"helm/release-pending"}
			s.expect.Forbid = []string{"helm/release-failed", "helm/no-deployed-release"}
			hist = append(hist, mk(5, "pending-upgrade", "Preparing upgrade", ago(72*time.Minute)))
		} else {
			s = newScenario("helm/real-harvester8309-fleet-release-pending-healthy", src, `
Look-alike: the same history a day after the fix (rollback to 4, upgrade again): revision 5 was
rolled back, revision 6 superseded it and revision 7 is deployed. Old superseded revisions are
not a stuck release.`)
			s.expect.Forbid = []string{"helm/release-pending", "helm/release-failed", "helm/no-deployed-release"}
			s.expect.MaxSeverity = "info"
			hist[3].status = "superseded"
			hist = append(hist, mk(5, "superseded", "Rollback to 4", ago(30*time.Hour)), mk(6, "superseded", "Rollback to 4", ago(29*time.Hour)), mk(7, "deployed", "Upgrade complete", ago(28*time.Hour)))
		}
		s.cluster("harvester-1", "downstream")
		var secrets []obj
		for _, r := range hist {
			secrets = append(secrets, r.object())
		}
		s.add("cattle-fleet-system/secrets.yaml", secrets...)
		out = append(out, s)
	}
	// rancher#17241: pulls from a Nexus registry fail with "unauthorized: authentication required"
	// until the workload names an imagePullSecret.
	for _, positive := range []bool{true, false} {
		const src = "https://github.com/rancher/rancher/issues/17241"
		var s *scenario
		img := "nexus.corp.example:8443/rancher/fleet-agent:v0.12.4"
		pullMsg := fmt.Sprintf(`Failed to pull image %q: rpc error: code = Unknown desc = failed to pull and unpack image %q: failed to resolve reference %q: unexpected status from HEAD request to https://nexus.corp.example:8443/v2/rancher/fleet-agent/manifests/v0.12.4: 401 Unauthorized`, img, img, img)
		rsHash := hash("nexus-rs")[:10]
		name := "fleet-agent-" + rsHash + "-" + hash("nexus")[:5]
		created := ago(48 * time.Minute)
		p := pod{ns: "cattle-fleet-system", name: name, ownerKind: "ReplicaSet", owner: "fleet-agent-" + rsHash, node: "nx-1-worker-1", created: created,
			labels: map[string]string{"app": "fleet-agent", "pod-template-hash": rsHash}, containers: []obj{container("fleet-agent", img, nil)}}
		var evs []obj
		if positive {
			s = newScenario("image/real-rancher17241-nexus-unauthorized-positive", src, `
The agent image comes from a Nexus registry that requires credentials; the pod names no
imagePullSecret, so every pull gets "401 Unauthorized" and the new agent has been in
ImagePullBackOff for 48 minutes.`)
			s.expect.RootCauses = []string{"image/pull-auth"}
			s.expect.Forbid = []string{"image/pull-network", "image/pull-not-found", "fleet/registration-broken"}
			p.statuses = []obj{waiting("fleet-agent", img, "ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q", img), 0, nil)}
			p.phase, p.conditions = "Pending", podConds(false, created)
			evs = append(evs,
				event{ns: "cattle-fleet-system", kind: "Pod", name: name, reason: "Failed", msg: pullMsg, first: created.Add(4 * time.Second), last: ago(2 * time.Minute), count: 12, component: "kubelet"}.object(),
				event{ns: "cattle-fleet-system", kind: "Pod", name: name, reason: "BackOff", typ: "Normal", msg: fmt.Sprintf("Back-off pulling image %q", img), first: created.Add(40 * time.Second), last: ago(30 * time.Second), count: 201, component: "kubelet"}.object())
		} else {
			s = newScenario("image/real-rancher17241-nexus-unauthorized-healthy", src, `
Look-alike with the report's workaround applied: the pod names the registry's pull secret and
its image was pulled 47 minutes ago; the agent runs.`)
			s.expect.Forbid = []string{"image/pull-auth", "config/private-registry-no-pull-secret"}
			s.expect.MaxSeverity = "info"
			p.statuses = []obj{running("fleet-agent", img, ago(47*time.Minute), 0, nil)}
			p.phase, p.conditions = "Running", podConds(true, ago(47*time.Minute))
		}
		s.cluster("nx-1", "downstream")
		po := p.object()
		if !positive {
			po["spec"].(obj)["imagePullSecrets"] = []obj{{"name": "nexus-pull"}}
			s.add("cattle-fleet-system/secrets.yaml", obj{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
				"metadata": meta("Secret", "nexus-pull", "cattle-fleet-system", ago(50*time.Minute), nil), "data": obj{".dockerconfigjson": ""}})
		}
		s.add("cattle-fleet-system/pods.yaml", po)
		if len(evs) > 0 {
			s.add("cattle-fleet-system/events.yaml", evs...)
		}
		out = append(out, s)
	}
	// rancher#25506: after the Rancher upgrade the old cluster agent pod stays in "removing" on a
	// healthy node and its replacement never starts.
	for _, positive := range []bool{true, false} {
		const src = "https://github.com/rancher/rancher/issues/25506"
		var s *scenario
		img := "rancher/rancher-agent:v2.3.5"
		old := pod{ns: "cattle-system", name: "cattle-cluster-agent-5d7b8c9f6d-kq2xv", ownerKind: "ReplicaSet", owner: "cattle-cluster-agent-5d7b8c9f6d", node: "do-cp-1",
			created: ago(20 * 24 * time.Hour), labels: map[string]string{"app": "cattle-cluster-agent", "pod-template-hash": "5d7b8c9f6d"},
			containers: []obj{container("cluster-register", img, nil)}, statuses: []obj{running("cluster-register", img, ago(20*24*time.Hour), 0, nil)},
			phase: "Running", conditions: podConds(true, ago(20*24*time.Hour)), grace: 30}
		if positive {
			s = newScenario("pod/real-rancher25506-agent-stuck-removing-positive", src, `
Rancher was upgraded 70 minutes ago: the old cattle-cluster-agent pod on the control-plane node
was deleted then and is still Terminating on a Ready node, so the upgrade of the agents has not
completed.`)
			s.expect.RootCauses = []string{"pod/terminating-stuck"}
			s.expect.Forbid = []string{"pod/crashloop"}
			old.deleted = ago(70 * time.Minute).Add(30 * time.Second)
		} else {
			s = newScenario("pod/real-rancher25506-agent-stuck-removing-healthy", src, `
Look-alike: the same upgrade 20 seconds after the old pod was deleted; it is within its 30 s
grace period and shutting down normally.`)
			s.expect.Forbid = []string{"pod/terminating-stuck"}
			s.expect.MaxSeverity = "info"
			old.deleted = ago(20 * time.Second).Add(30 * time.Second)
		}
		s.cluster("do-1", "downstream")
		s.add("cattle-system/pods.yaml", old.object())
		s.add("nodes.yaml", node{name: "do-cp-1", roles: []string{"control-plane", "etcd"}, created: ago(300 * 24 * time.Hour), kubelet: "v1.15.9", arch: "amd64", cpu: "4", mem: "8009520Ki", heartbeat: ago(20 * time.Second)}.object())
		out = append(out, s)
	}
	return out
}
