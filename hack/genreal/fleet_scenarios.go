package main

import (
	"fmt"
	"time"
)

func fleetScenarios() []*scenario {
	var out []*scenario
	// rke2-docs#53 (rke2#3195): RKE2 v1.25 drops PodSecurityPolicy. A fleet of 34 edge clusters
	// moved to v1.25 overnight, and a shared bundle still ships a policy/v1beta1 PSP: every
	// cluster reports the same error. One release problem, not 34.
	{
		const src = "https://github.com/rancher/rke2-docs/pull/53"
		msg := "unable to build kubernetes objects from current release manifest: resource mapping not found for name: \"edge-baseline-restricted\" namespace: \"\" from \"\": no matches for kind \"PodSecurityPolicy\" in version \"policy/v1beta1\"\nensure CRDs are installed first"
		for _, positive := range []bool{true, false} {
			var s *scenario
			if positive {
				s = newScenario("fleet/real-rke2psp-fleetwide-positive", src, `
34 RKE2 edge clusters were upgraded to v1.25 between 02:00 and 06:00; the shared
edge-baseline bundle still holds a policy/v1beta1 PodSecurityPolicy, so its BundleDeployment is
ErrApplied on every one of them with the same Helm error. One fleet-wide incident whose members
are api/removed (the bundle's content), not 34 agent or CRD faults.`)
				s.expect.RootCauses = []string{"fleet/fleetwide-failure"}
				s.expect.Findings = []string{"api/removed", "fleet/bundle-err-applied"}
				s.expect.Forbid = []string{"agent/crd-missing", "crd/missing", "fleet/agent-heartbeat-stale"}
			} else {
				s = newScenario("fleet/real-rke2psp-fleetwide-healthy", src, `
Look-alike: the same 34 clusters after the bundle dropped its PSP. A new revision of the
bundle is rolling out: 31 clusters applied it, 3 have been WaitApplied for two minutes (the
agents pick it up on their next reconcile). Noise, not a fleet-wide failure.`)
				s.expect.Forbid = []string{"fleet/fleetwide-failure", "api/removed", "fleet/bundle-err-applied", "fleet/bundle-wait-applied-stuck"}
				s.expect.MaxSeverity = "info"
			}
			s.cluster("local", "management")
			var fcs []fleetCluster
			var bds []bundleDeployment
			for i := 1; i <= 34; i++ {
				display := fmt.Sprintf("edge-%02d", i)
				fc := downstream(clusterID(display), display, ago(time.Duration(2+i%12)*time.Minute))
				bd := bundleDeployment{cluster: fc, bundle: "edge-baseline", bundleNS: "fleet-default", defaultNS: "edge-baseline", created: ago(200 * 24 * time.Hour), state: "ready", at: ago(30 * time.Hour), gen: 9}
				if positive {
					at := ago(7*time.Hour - time.Duration(i)*7*time.Minute)
					bd.state, bd.msg, bd.at, bd.gen = "errApplied", msg, at, 10
					fc.readyMsg, fc.readyAt, fc.state = "ErrApplied(1) [Bundle edge-baseline: "+msg+"]", at, "ErrApplied"
				} else if i > 31 {
					bd.state, bd.at, bd.gen = "waitApplied", ago(30*time.Hour), 11
					fc.readyMsg, fc.readyAt, fc.state = "WaitApplied(1) [Bundle edge-baseline]", ago(2*time.Minute), "WaitApplied"
				} else {
					bd.at, bd.gen = ago(time.Duration(30+i)*time.Second), 11
				}
				fcs = append(fcs, fc)
				bds = append(bds, bd)
			}
			s.management(fcs, bds)
			if !positive {
				b := obj{"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle", "metadata": meta("Bundle", "edge-baseline", "fleet-default", ago(200*24*time.Hour), map[string]string{"fleet.cattle.io/repo-name": "edge"}),
					"spec": obj{"defaultNamespace": "edge-baseline", "forceSyncGeneration": 0},
					"status": obj{"conditions": []obj{cond("Ready", "False", ago(2*time.Minute), "", "WaitApplied(3) [Cluster fleet-default/"+clusterID("edge-32")+"; Cluster fleet-default/"+clusterID("edge-33")+"; Cluster fleet-default/"+clusterID("edge-34")+"]")},
						"display": obj{"readyClusters": "31/34", "state": "WaitApplied"}, "summary": obj{"desiredReady": 34, "ready": 31, "waitApplied": 3}}}
				s.add(s.in("local", "fleet/bundles.fleet.cattle.io.yaml"), b)
			}
			out = append(out, s)
		}
	}
	// harvester#7088: upgrading Harvester v1.3.2 -> v1.4.0, the mcc-harvester bundle is ErrApplied
	// because Harvester's own validating webhook refuses to delete the Helm release Secret.
	{
		const src = "https://github.com/harvester/harvester/issues/7088"
		msg := `encountered 2 deletion errors. First is: admission webhook "validator.harvesterhci.io" denied the request: Internal error occurred: no route match found for DELETE /v1, Kind=Secret harvester-system/sh.helm.release.v1.harvester.v2`
		for _, positive := range []bool{true, false} {
			var s *scenario
			local := localCluster
			bd := bundleDeployment{cluster: local, bundle: "mcc-harvester", bundleNS: "fleet-local", defaultNS: "harvester-system", created: ago(300 * 24 * time.Hour), state: "ready", at: ago(3 * 24 * time.Hour), gen: 12}
			crd := bundleDeployment{cluster: local, bundle: "mcc-harvester-crd", bundleNS: "fleet-local", defaultNS: "harvester-system", created: ago(300 * 24 * time.Hour), state: "ready", at: ago(3 * 24 * time.Hour), gen: 12}
			hist := []helmRelease{{name: "harvester", ns: "harvester-system", rev: 2, status: "superseded", description: "Upgrade complete", chart: "harvester", version: "1.3.2", app: "v1.3.2", first: ago(300 * 24 * time.Hour), last: ago(120 * 24 * time.Hour)}}
			if positive {
				s = newScenario("fleet/real-harvester7088-webhook-denies-delete-positive", src, `
Harvester v1.3.2 -> v1.4.0: the upgrade waits for the mcc-harvester bundle, which has been
ErrApplied for 2h10m: Harvester's validating webhook refuses to delete the old release
Secret ("admission webhook \"validator.harvesterhci.io\" denied the request"). The webhook's
refusal is the root cause, the bundle failure its symptom; the Helm history itself is settled
(revision 3 deployed).`)
				s.expect.RootCauses = []string{"workload/admission-denied"}
				s.expect.Findings = []string{"fleet/bundle-err-applied"}
				s.expect.Forbid = []string{"helm/release-failed", "helm/release-pending", "api/removed", "agent/crd-missing"}
				bd.state, bd.msg, bd.at, bd.gen = "errApplied", msg, ago(130*time.Minute), 13
				hist = append(hist, helmRelease{name: "harvester", ns: "harvester-system", rev: 3, status: "deployed", description: "Upgrade complete", chart: "harvester", version: "1.4.0", app: "v1.4.0", first: ago(300 * 24 * time.Hour), last: ago(140 * time.Minute)})
			} else {
				s = newScenario("fleet/real-harvester7088-webhook-denies-delete-healthy", src, `
Look-alike: a Harvester cluster after a finished v1.4.0 upgrade, with the usual leftovers:
a failed revision 3 from a first attempt superseded by revision 4, the old revision 2, and both
mcc bundles Ready. Nothing to report at warning or above.`)
				s.expect.Forbid = []string{"fleet/bundle-err-applied", "helm/release-failed", "helm/release-pending"}
				s.expect.MaxSeverity = "info"
				hist = append(hist,
					helmRelease{name: "harvester", ns: "harvester-system", rev: 3, status: "failed", description: "Upgrade \"harvester\" failed: " + msg, chart: "harvester", version: "1.4.0", app: "v1.4.0", first: ago(300 * 24 * time.Hour), last: ago(26 * time.Hour)},
					helmRelease{name: "harvester", ns: "harvester-system", rev: 4, status: "deployed", description: "Upgrade complete", chart: "harvester", version: "1.4.0", app: "v1.4.0", first: ago(300 * 24 * time.Hour), last: ago(25 * time.Hour)})
			}
			s.cluster("local", "management")
			s.management(nil, []bundleDeployment{bd, crd})
			var secrets []obj
			for _, r := range hist {
				secrets = append(secrets, r.object())
			}
			s.add("harvester-system/secrets.yaml", secrets...)
			out = append(out, s)
		}
	}
	// rancher#33980: after upgrading Rancher 2.5.9 -> 2.6, the old fleet-agent is removed and the
	// new one never checks in; the agent bundles are ErrApplied: no Deployment "fleet-agent".
	{
		const src = "https://github.com/rancher/rancher/issues/33980"
		msg := `no Deployment with the name "fleet-agent" found`
		for _, positive := range []bool{true, false} {
			var s *scenario
			if positive {
				s = newScenario("fleet/real-rancher33980-agent-deployment-gone-positive", src, `
Rancher 2.5.9 -> 2.6: the old fleet-agent was deleted and the new one never checked in. Both
downstream clusters have not checked in for 3 hours (last check-in before the upgrade) and
their agent BundleDeployments are ErrApplied with 'no Deployment with the name "fleet-agent"
found': the agent bundle that cannot be applied is each incident's root cause, the stale
heartbeat and the agent that did not move its symptoms.`)
				s.expect.RootCauses = []string{"fleet/bundle-err-applied"}
				s.expect.Findings = []string{"fleet/agent-heartbeat-stale", "fleet/agent-upgrade-stuck"}
				s.expect.Forbid = []string{"api/removed", "agent/crd-missing"}
			} else {
				s = newScenario("fleet/real-rancher33980-agent-deployment-gone-healthy", src, `
Look-alike: the same upgrade two minutes after the new agents started: both clusters checked
in a minute ago and their agent bundles are Ready again; the Fleet Clusters still show the
upgrade's last Ready transition.`)
				s.expect.Forbid = []string{"fleet/agent-heartbeat-stale", "fleet/bundle-err-applied", "fleet/agent-upgrade-stuck"}
				s.expect.MaxSeverity = "info"
			}
			s.cluster("local", "management")
			var fcs []fleetCluster
			var bds []bundleDeployment
			for _, d := range []string{"c-gqn2r", "c-t8v4x"} {
				fc := fleetCluster{ns: "fleet-default", name: d, display: d, created: ago(400 * 24 * time.Hour), lastSeen: ago(time.Minute), readyAt: ago(2 * time.Minute)}
				bd := bundleDeployment{cluster: fc, bundle: "fleet-agent-" + d, bundleNS: "fleet-default", defaultNS: "cattle-fleet-system", created: ago(400 * 24 * time.Hour), state: "ready", at: ago(90 * time.Second), gen: 5}
				if positive {
					fc.lastSeen = ago(3*time.Hour + 10*time.Minute)
					fc.readyMsg, fc.readyAt, fc.state = "ErrApplied(1) [Bundle fleet-agent-"+d+": "+msg+"]", ago(3*time.Hour), "ErrApplied"
					bd.state, bd.msg, bd.at = "errApplied", msg, ago(3*time.Hour)
				}
				fcs = append(fcs, fc)
				bds = append(bds, bd)
			}
			s.management(fcs, bds)
			out = append(out, s)
		}
	}
	// fleet#173: the fleet-agent pod of one cluster disappeared; its bundles sit in WaitApplied
	// (176/177) and the controller cannot update that cluster's BundleDeployment.
	{
		const src = "https://github.com/rancher/fleet/issues/173"
		for _, positive := range []bool{true, false} {
			var s *scenario
			fc := downstream("c-lg4tr", "c-lg4tr", ago(5*time.Hour))
			fc.readyMsg, fc.readyAt, fc.state = "WaitApplied(1) [Bundle platform-logging]", ago(4*time.Hour), "WaitApplied"
			other := downstream("c-8sd2k", "c-8sd2k", ago(3*time.Minute))
			bd := bundleDeployment{cluster: fc, bundle: "platform-logging", bundleNS: "fleet-default", defaultNS: "cattle-logging-system", created: ago(100 * 24 * time.Hour), state: "waitApplied", at: ago(9 * 24 * time.Hour), gen: 8}
			ok := bundleDeployment{cluster: other, bundle: "platform-logging", bundleNS: "fleet-default", defaultNS: "cattle-logging-system", created: ago(100 * 24 * time.Hour), state: "ready", at: ago(4 * time.Hour), gen: 8}
			bundleMsg := "WaitApplied(1) [Cluster fleet-default/c-lg4tr]"
			bundleAt := ago(4 * time.Hour)
			if positive {
				s = newScenario("fleet/real-fleet173-agent-gone-waitapplied-positive", src, `
One cluster's fleet-agent pod is gone: its last check-in was 5 hours ago and the new revision
of platform-logging has waited 4 hours for it ("WaitApplied(1) [Cluster
fleet-default/c-lg4tr]"), while the other cluster applied it at once.`)
				s.expect.RootCauses = []string{"fleet/agent-heartbeat-stale"}
				s.expect.Findings = []string{"fleet/bundle-wait-applied-stuck"}
				s.expect.Forbid = []string{"fleet/bundle-err-applied"}
			} else {
				s = newScenario("fleet/real-fleet173-agent-gone-waitapplied-healthy", src, `
Look-alike: the same rollout two minutes in. c-lg4tr checked in four minutes ago and has not
picked up the new revision yet (the Bundle's WaitApplied message is two minutes old).`)
				s.expect.Forbid = []string{"fleet/agent-heartbeat-stale", "fleet/bundle-wait-applied-stuck"}
				s.expect.MaxSeverity = "info"
				fc.lastSeen, fc.readyAt = ago(4*time.Minute), ago(2*time.Minute)
				bundleAt = ago(2 * time.Minute)
				ok.at = ago(90 * time.Second)
			}
			s.cluster("local", "management")
			s.management([]fleetCluster{fc, other}, []bundleDeployment{bd, ok})
			b := obj{"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle", "metadata": meta("Bundle", "platform-logging", "fleet-default", ago(100*24*time.Hour), map[string]string{"fleet.cattle.io/repo-name": "platform"}),
				"spec":   obj{"defaultNamespace": "cattle-logging-system"},
				"status": obj{"conditions": []obj{cond("Ready", "False", bundleAt, "", bundleMsg)}, "display": obj{"readyClusters": "1/2", "state": "WaitApplied"}, "summary": obj{"desiredReady": 2, "ready": 1, "waitApplied": 1}}}
			s.add(s.in("local", "fleet/bundles.fleet.cattle.io.yaml"), b)
			out = append(out, s)
		}
	}
	// harvester#3675: the v1.1.1 -> v1.1.2 upgrade waits forever on mcc-harvester, ErrApplied with
	// Helm's "another operation (install/upgrade/rollback) is in progress".
	{
		const src = "https://github.com/harvester/harvester/issues/3675"
		msg := "another operation (install/upgrade/rollback) is in progress"
		for _, positive := range []bool{true, false} {
			var s *scenario
			bd := bundleDeployment{cluster: localCluster, bundle: "mcc-harvester", bundleNS: "fleet-local", defaultNS: "harvester-system", created: ago(300 * 24 * time.Hour), state: "waitApplied", at: ago(30 * 24 * time.Hour), gen: 7}
			hist := []helmRelease{
				{name: "harvester", ns: "harvester-system", rev: 5, status: "deployed", description: "Upgrade complete", chart: "harvester", version: "1.1.1", app: "v1.1.1", first: ago(300 * 24 * time.Hour), last: ago(30 * 24 * time.Hour)},
				{name: "harvester", ns: "harvester-system", rev: 6, status: "pending-upgrade", description: "Preparing upgrade", chart: "harvester", version: "1.1.2", app: "v1.1.2", first: ago(300 * 24 * time.Hour), last: ago(3*time.Hour + 40*time.Minute)},
			}
			if positive {
				s = newScenario("fleet/real-harvester3675-another-operation-positive", src, `
Harvester v1.1.1 -> v1.1.2: the upgrade loops on "Current state: ErrApplied" for hours. The
harvester release's revision 6 has been pending-upgrade for 3h40m (the Helm client died
mid-upgrade), and the mcc-harvester bundle is ErrApplied with "another operation
(install/upgrade/rollback) is in progress".`)
				s.expect.RootCauses = []string{"helm/release-pending"}
				s.expect.Findings = []string{"fleet/bundle-err-applied"}
				s.expect.Forbid = []string{"helm/release-failed", "api/removed"}
				bd.state, bd.msg, bd.at = "errApplied", msg, ago(3*time.Hour+30*time.Minute)
			} else {
				s = newScenario("fleet/real-harvester3675-another-operation-healthy", src, `
Look-alike: the same upgrade 40 seconds into the Helm upgrade: revision 6 is pending-upgrade
because it is being applied right now, and the bundle's new revision is WaitApplied.`)
				s.expect.Forbid = []string{"helm/release-pending", "fleet/bundle-err-applied", "fleet/bundle-wait-applied-stuck", "helm/no-deployed-release"}
				s.expect.MaxSeverity = "info"
				hist[1].last = ago(40 * time.Second)
			}
			s.cluster("local", "management")
			s.management(nil, []bundleDeployment{bd})
			var secrets []obj
			for _, r := range hist {
				secrets = append(secrets, r.object())
			}
			s.add("harvester-system/secrets.yaml", secrets...)
			out = append(out, s)
		}
	}
	// harvester#8240: v1.4.2 -> v1.5.0 stalls at "Upgrade the system services": the upgradelog
	// operator bundle fails its chart's CRD check, while mcc-harvester only drifted.
	{
		const src = "https://github.com/harvester/harvester/issues/8240"
		crdMsg := "execution error at (rancher-logging/templates/validate-install-crd.yaml:26:7): Required CRDs are missing. Please install the corresponding CRD chart before installing this chart."
		for _, positive := range []bool{true, false} {
			var s *scenario
			harv := bundleDeployment{cluster: localCluster, bundle: "mcc-harvester", bundleNS: "fleet-local", defaultNS: "harvester-system", created: ago(300 * 24 * time.Hour), state: "modified", at: ago(5 * time.Hour), gen: 14}
			bds := []bundleDeployment{harv}
			if positive {
				s = newScenario("fleet/real-harvester8240-upgradelog-crds-positive", src, `
The upgrade stalls at phase 3: the upgradelog operator's bundle has been ErrApplied for 4 hours
("Required CRDs are missing. Please install the corresponding CRD chart before installing this
chart."), and mcc-harvester shows drift ("cdi missing"). The bundle that cannot be applied is
the root cause; the drift is reported on its own as a warning.`)
				s.expect.RootCauses = []string{"fleet/bundle-err-applied"}
				s.expect.Findings = []string{"fleet/bundle-modified"}
				s.expect.Forbid = []string{"api/removed", "agent/crd-missing"}
				bds = append(bds, bundleDeployment{cluster: localCluster, bundle: "mcc-hvst-upgrade-bckj7-upgradelog-operator", bundleNS: "fleet-local", defaultNS: "harvester-system", created: ago(4 * time.Hour), state: "errApplied", msg: crdMsg, at: ago(4 * time.Hour), gen: 2})
			} else {
				s = newScenario("fleet/real-harvester8240-upgradelog-crds-healthy", src, `
Look-alike from the Harvester upgrade troubleshooting docs: mcc-harvester is Modified (a
kubevirt field patched by hand) and everything else is Ready. Drift is a warning, not a stuck
upgrade.`)
				s.expect.Forbid = []string{"fleet/bundle-err-applied", "fleet/bundle-wait-applied-stuck"}
				s.expect.MaxSeverity = "warning"
			}
			s.cluster("local", "management")
			s.management(nil, bds)
			out = append(out, s)
		}
	}
	return out
}
