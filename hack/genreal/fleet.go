package main

import (
	"fmt"
	"strings"
	"time"
)

var (
	localCluster = fleetCluster{ns: "fleet-local", name: "local", created: ago(210 * 24 * time.Hour), lastSeen: ago(4 * time.Minute), readyAt: ago(3 * time.Hour)}
	agentImage   = "rancher/fleet-agent:v0.12.4"
)

// management adds the Fleet objects of the management cluster "local".
func (s *scenario) management(fcs []fleetCluster, bds []bundleDeployment) {
	var cs, ds []obj
	for _, c := range append([]fleetCluster{localCluster}, fcs...) {
		cs = append(cs, c.object())
	}
	for _, b := range bds {
		ds = append(ds, b.object())
	}
	s.add(s.in("local", "fleet/clusters.fleet.cattle.io.yaml"), cs...)
	s.add(s.in("local", "fleet/bundledeployments.fleet.cattle.io.yaml"), ds...)
}

func downstream(name, display string, lastSeen time.Time) fleetCluster {
	return fleetCluster{ns: "fleet-default", name: name, display: display, created: ago(200 * 24 * time.Hour), lastSeen: lastSeen, readyAt: ago(6 * time.Hour)}
}

func clusterID(display string) string { return "c-m-" + hash(display)[:8] }

// agentPod is a running fleet-agent pod on a downstream cluster, its log given.
func (s *scenario) agentPod(cluster string, since time.Time, restarts int, last obj, log string) {
	rs := "fleet-agent-" + hash(cluster + "rs")[:10]
	name := rs + "-" + hash(cluster)[:5]
	p := pod{ns: "cattle-fleet-system", name: name, ownerKind: "ReplicaSet", owner: rs, node: cluster + "-cp-1", created: since.Add(-time.Minute),
		labels:     map[string]string{"app": "fleet-agent", "pod-template-hash": hash(cluster + "rs")[:10]},
		containers: []obj{container("fleet-agent", agentImage, obj{"requests": obj{"cpu": "100m", "memory": "128Mi"}})},
		statuses:   []obj{running("fleet-agent", agentImage, since, restarts, last)}, phase: "Running", conditions: podConds(true, since)}
	s.add(s.in(cluster, "cattle-fleet-system/pods.yaml"), p.object())
	s.add(s.in(cluster, "cattle-fleet-system/replicasets.yaml"), replicaSet("cattle-fleet-system", "fleet-agent", hash(cluster + "rs")[:10], since.Add(-time.Minute), agentImage, nil, "3", 1))
	if log != "" {
		s.logs[s.in(cluster, "logs/cattle-fleet-system/"+name+"/fleet-agent.log")] = log
	}
}

func nodes(cluster, kubelet string, n int, created time.Time) []obj {
	var out []obj
	for i := 1; i <= n; i++ {
		roles := []string{"worker"}
		if i == 1 {
			roles = []string{"control-plane", "etcd", "master"}
		}
		name := fmt.Sprintf("%s-cp-%d", cluster, i)
		if i > 1 {
			name = fmt.Sprintf("%s-worker-%d", cluster, i-1)
		}
		out = append(out, node{name: name, roles: roles, created: created, kubelet: kubelet, arch: "amd64", cpu: "8", mem: "32863468Ki", heartbeat: ago(40 * time.Second)}.object())
	}
	return out
}

func apiScenarios() []*scenario {
	var out []*scenario
	// helm#7219: a release deployed before the cluster moved to Kubernetes 1.25 still holds a
	// policy/v1beta1 PodSecurityPolicy; every upgrade now fails before Helm writes a revision.
	{
		const src = "https://github.com/helm/helm/issues/7219"
		ksm := "monitoring-kube-state-metrics"
		msg := `current release manifest contains removed kubernetes api(s) for this kubernetes version and it is therefore unable to build the kubernetes objects for performing the diff. error from kubernetes: unable to recognize "": no matches for kind "PodSecurityPolicy" in version "policy/v1beta1"`
		for _, positive := range []bool{true, false} {
			fc := downstream(clusterID("prod-eu-1"), "prod-eu-1", ago(3*time.Minute))
			bd := bundleDeployment{cluster: fc, bundle: ksm, bundleNS: "fleet-default", defaultNS: "monitoring", created: ago(90 * 24 * time.Hour), state: "ready", at: ago(20 * time.Hour), gen: 6}
			var s *scenario
			hist := []helmRelease{
				{name: ksm, ns: "monitoring", rev: 4, status: "superseded", description: "Upgrade complete", chart: "kube-state-metrics", version: "4.18.0", app: "2.6.0", first: ago(400 * 24 * time.Hour), last: ago(120 * 24 * time.Hour)},
				{name: ksm, ns: "monitoring", rev: 5, status: "deployed", description: "Upgrade complete", chart: "kube-state-metrics", version: "4.20.2", app: "2.6.0", first: ago(400 * 24 * time.Hour), last: ago(60 * 24 * time.Hour),
					manifest: "---\n# Source: kube-state-metrics/templates/podsecuritypolicy.yaml\napiVersion: policy/v1beta1\nkind: PodSecurityPolicy\nmetadata:\n  name: " + ksm + "\n"},
			}
			if positive {
				s = newScenario("api/real-helm7219-psp-removed-positive", src, `
prod-eu-1 was upgraded from RKE2 v1.24 to v1.25 at 08:00. The kube-state-metrics bundle's
release still holds a policy/v1beta1 PodSecurityPolicy (revision 5, deployed in September), so
every Fleet upgrade of it fails with Helm's "current release manifest contains removed
kubernetes api(s)" before a revision is written: the BundleDeployment is ErrApplied and the
healthy fleet-agent keeps relaying the error. Not a missing CRD and not an agent fault.`)
				s.expect.RootCauses = []string{"api/removed"}
				s.expect.Findings = []string{"fleet/bundle-err-applied"}
				s.expect.Forbid = []string{"agent/crd-missing", "crd/missing", "helm/release-failed", "helm/release-pending", "agent/config-invalid"}
				bd.state, bd.msg, bd.at, bd.gen = "errApplied", msg, ago(85*time.Minute), 7
				fc.readyMsg, fc.readyAt, fc.state = "ErrApplied(1) [Bundle "+ksm+": "+msg+"]", ago(85*time.Minute), "ErrApplied"
			} else {
				s = newScenario("api/real-helm7219-psp-removed-healthy", src, `
Look-alike after the fix: the release was rewritten with helm mapkubeapis and the chart moved to
a version without the PodSecurityPolicy (revision 6 deployed at 08:40, after the 1.25 upgrade);
the BundleDeployment is Ready. The agent's log still holds the error from before the fix, a
dozen times, but not in its recent window of repeated errors.`)
				s.expect.Forbid = []string{"api/removed", "agent/crd-missing", "crd/missing", "fleet/bundle-err-applied"}
				s.expect.MaxSeverity = "info"
				hist[1].status = "superseded"
				hist = append(hist, helmRelease{name: ksm, ns: "monitoring", rev: 6, status: "deployed", description: "Upgrade complete", chart: "kube-state-metrics", version: "5.10.1", app: "2.10.0", first: ago(400 * 24 * time.Hour), last: ago(50 * time.Minute)})
				bd.at = ago(50 * time.Minute)
			}
			s.cluster("local", "management")
			s.cluster("prod-eu-1", "downstream")
			s.management([]fleetCluster{fc}, []bundleDeployment{bd})
			var secrets []obj
			for _, r := range hist {
				secrets = append(secrets, r.object())
			}
			s.add(s.in("prod-eu-1", "monitoring/secrets.yaml"), secrets...)
			s.add(s.in("prod-eu-1", "nodes.yaml"), nodes("prod-eu-1", "v1.25.16+rke2r1", 3, ago(300*24*time.Hour))...)
			var log strings.Builder
			t := ago(85 * time.Minute)
			log.WriteString(zapInfo(ago(6*time.Hour), "setup", "starting manager"))
			for i := 0; i < 12; i++ {
				log.WriteString(zapError(t, ksm, fc.clusterNS(), "failed deploying bundle: "+msg))
				t = t.Add(time.Duration(1<<min(i, 4)) * 30 * time.Second)
			}
			if !positive {
				for i := 0; i < 220; i++ {
					log.WriteString(zapInfo(ago(45*time.Minute).Add(time.Duration(i)*10*time.Second), "bundledeployment.DeployBundle", "Deployed bundle"))
				}
			}
			s.agentPod("prod-eu-1", ago(6*time.Hour), 0, nil, log.String())
			out = append(out, s)
		}
	}
	// The same helm wrapper around a CRD's group/version is a CRD problem, not api/removed:
	// longhorn's VolumeSnapshotClass needs the external-snapshotter CRDs (longhorn#1788).
	{
		const src = "https://github.com/longhorn/longhorn/issues/1788"
		msg := "unable to build kubernetes objects from release manifest: resource mapping not found for name: \"longhorn-snapshot-vsc\" namespace: \"\" from \"\": no matches for kind \"VolumeSnapshotClass\" in version \"snapshot.storage.k8s.io/v1beta1\"\nensure CRDs are installed first"
		fc := downstream(clusterID("edge-7"), "edge-7", ago(2*time.Minute))
		fc.readyMsg, fc.readyAt, fc.state = "ErrApplied(1) [Bundle storage-longhorn: "+msg+"]", ago(2*time.Hour), "ErrApplied"
		bd := bundleDeployment{cluster: fc, bundle: "storage-longhorn", bundleNS: "fleet-default", defaultNS: "longhorn-system", created: ago(30 * 24 * time.Hour), state: "errApplied", msg: msg, at: ago(2 * time.Hour), gen: 3}
		s := newScenario("api/real-longhorn1788-snapshot-crd-lookalike", src, `
Look-alike of api/removed: the same Helm "resource mapping not found ... ensure CRDs are
installed first" names snapshot.storage.k8s.io/v1, the group of the external-snapshotter CRDs,
not of Kubernetes itself (VolumeSnapshotClass is served by a CRD the chart expects). It is a bundle that cannot be applied for want of a CRD, never
api/removed: crd/missing names the kind and its group, the bundle is its symptom.`)
		s.expect.RootCauses = []string{"crd/missing"}
		s.expect.Findings = []string{"fleet/bundle-err-applied"}
		s.expect.Forbid = []string{"api/removed"}
		s.cluster("local", "management")
		s.management([]fleetCluster{fc}, []bundleDeployment{bd})
		out = append(out, s)
	}
	return out
}
