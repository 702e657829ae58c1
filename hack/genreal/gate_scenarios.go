package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"time"
)

// The upgrade gate: APIs that the Kubernetes version a cluster is about to install no longer
// serves (Kubernetes' deprecation guide: flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema and
// PriorityLevelConfiguration are not served from v1.32; use flowcontrol.apiserver.k8s.io/v1),
// and CRD stored versions a new CRD drops (apiextensions-apiserver rejects a CRD whose
// spec.versions lacks a status.storedVersions entry).
const deprecationGuide = "https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-32"

const (
	gateCluster = "prod-ap-1"
	k8s131      = "v1.31.12+rke2r1"
	k8s132      = "v1.32.5+rke2r1"
)

func flowManifest(apiVersion string) string {
	return "---\n# Source: apf-tuning/templates/flowschema.yaml\napiVersion: " + apiVersion + "\nkind: FlowSchema\nmetadata:\n  name: apf-tuning-batch\nspec:\n  matchingPrecedence: 1000\n  priorityLevelConfiguration:\n    name: apf-tuning-batch\n" +
		"---\n# Source: apf-tuning/templates/prioritylevel.yaml\napiVersion: " + apiVersion + "\nkind: PriorityLevelConfiguration\nmetadata:\n  name: apf-tuning-batch\nspec:\n  type: Limited\n"
}

// apfRelease is the history of a release that tunes API Priority and Fairness: revision 1 from
// a chart still on v1beta3, revision 2 as given.
func apfRelease(rev2 string) []helmRelease {
	first := ago(200 * 24 * time.Hour)
	return []helmRelease{
		{name: "apf-tuning", ns: "kube-system", rev: 1, status: "superseded", description: "Install complete", chart: "apf-tuning", version: "0.3.0", app: "0.3.0", first: first, last: first, manifest: flowManifest("flowcontrol.apiserver.k8s.io/v1beta3")},
		{name: "apf-tuning", ns: "kube-system", rev: 2, status: "deployed", description: "Upgrade complete", chart: "apf-tuning", version: "0.4.0", app: "0.4.0", first: first, last: ago(30 * 24 * time.Hour), manifest: flowManifest(rev2)},
	}
}

func (s *scenario) releases(cluster string, hist []helmRelease) {
	var secrets []obj
	for _, r := range hist {
		secrets = append(secrets, r.object())
	}
	s.add(s.in(cluster, r0(hist).ns+"/secrets.yaml"), secrets...)
}

func r0(h []helmRelease) helmRelease { return h[0] }

// rke2ServerPlan is the server Plan Rancher's docs write for RKE2, moved to version.
func rke2ServerPlan(version string) obj {
	return plan{name: "server-plan", version: version, image: "rancher/rke2-upgrade", latestVersion: version, server: true,
		complete: cond("Complete", "True", ago(20*time.Minute), "", ""), created: ago(20 * time.Minute)}.object()
}

func gz64(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// bundle is a fleet.cattle.io/v1alpha1 Bundle made by a GitRepo, its resources given.
func bundle(name, repo string, resources []obj) obj {
	labels := map[string]string{"fleet.cattle.io/repo-name": repo, "fleet.cattle.io/commit": hash("commit" + name)[:40]}
	return obj{
		"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
		"metadata": meta("Bundle", name, "fleet-default", ago(60*24*time.Hour), labels),
		"spec": obj{"defaultNamespace": "kube-system", "resources": resources,
			"targets": []obj{{"clusterName": clusterID(gateCluster)}}},
		"status": obj{"summary": obj{"desiredReady": 1, "ready": 1}},
	}
}

func crd(name, group, plural, kind string, versions []obj, stored []string) obj {
	return obj{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": meta("CustomResourceDefinition", name, "", ago(300*24*time.Hour), nil),
		"spec": obj{"group": group, "scope": "Namespaced", "names": obj{"plural": plural, "kind": kind, "singular": kind, "listKind": kind + "List"},
			"versions": versions},
		"status": obj{"storedVersions": stored, "acceptedNames": obj{"plural": plural, "kind": kind}},
	}
}

func crdVersion(name string, served, storage bool) obj {
	return obj{"name": name, "served": served, "storage": storage, "schema": obj{"openAPIV3Schema": obj{"type": "object"}}}
}

const widgetsCRDv2 = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.apps.example.com
spec:
  group: apps.example.com
  names:
    kind: Widget
    plural: widgets
  scope: Namespaced
  versions:
  - name: v2
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
`

func gateScenarios() []*scenario {
	var out []*scenario
	for _, positive := range []bool{true, false} {
		// A release whose deployed revision uses v1beta3, on a cluster whose RKE2 server Plan
		// moves it to v1.32: the upgrade gate.
		var s *scenario
		if positive {
			s = newScenario("api/real-k8s132-flowschema-target-positive", deprecationGuide, `
prod-ap-1 runs RKE2 v1.31.12 and its system-upgrade-controller server Plan was just moved to
v1.32.5+rke2r1. Revision 2 of the apf-tuning release (deployed) still has a FlowSchema and a
PriorityLevelConfiguration in flowcontrol.apiserver.k8s.io/v1beta3, which v1.32 no longer serves:
nothing fails yet, but after the upgrade Helm cannot build that release's stored manifest, so it
can neither be upgraded nor rolled back. A blocker before the upgrade.`)
			s.expect.RootCauses = []string{"api/removed-in-target"}
			s.expect.Forbid = []string{"api/removed", "crd/missing", "helm/release-failed"}
			s.releases(gateCluster, apfRelease("flowcontrol.apiserver.k8s.io/v1beta3"))
		} else {
			s = newScenario("api/real-k8s132-flowschema-target-healthy", deprecationGuide, `
Look-alike: the same cluster and Plan, but the chart moved to flowcontrol.apiserver.k8s.io/v1 in
revision 2 (deployed). Revision 1, superseded, still has v1beta3: it only matters to a rollback to
it, and history keeps it after any fix, so it blocks nothing.`)
			s.expect.Forbid = []string{"api/removed-in-target", "api/removed"}
			s.expect.MaxSeverity = "info"
			s.releases(gateCluster, apfRelease("flowcontrol.apiserver.k8s.io/v1"))
		}
		s.cluster(gateCluster, "downstream")
		s.add(s.in(gateCluster, "nodes.yaml"), nodes(gateCluster, k8s131, 3, ago(300*24*time.Hour))...)
		s.add(s.in(gateCluster, "system-upgrade/plans.yaml"), rke2ServerPlan(k8s132))
		out = append(out, s)
	}
	for _, positive := range []bool{true, false} {
		// The same release on a cluster that already runs v1.32: stuck now.
		var s *scenario
		if positive {
			s = newScenario("api/real-k8s132-flowschema-removed-positive", deprecationGuide, `
prod-ap-1 was upgraded to RKE2 v1.32.5 before anyone checked: revision 2 of the apf-tuning release
(deployed) still uses flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema and
PriorityLevelConfiguration, which the cluster no longer serves. No upgrade was tried since, so no
error message says so yet; the stored manifest does: the next upgrade or rollback fails.`)
			s.expect.RootCauses = []string{"api/removed"}
			s.expect.Forbid = []string{"api/removed-in-target", "crd/missing"}
			s.add(s.in(gateCluster, "nodes.yaml"), nodes(gateCluster, k8s132, 3, ago(300*24*time.Hour))...)
		} else {
			s = newScenario("api/real-k8s132-flowschema-removed-healthy", deprecationGuide, `
Look-alike: the same release on a cluster that runs v1.31.12 with no upgrade Plan: v1beta3 is
still served (deprecated, not removed) and no upgrade is pending, so nothing blocks.`)
			s.expect.Forbid = []string{"api/removed", "api/removed-in-target"}
			s.expect.MaxSeverity = "info"
			s.add(s.in(gateCluster, "nodes.yaml"), nodes(gateCluster, k8s131, 3, ago(300*24*time.Hour))...)
		}
		s.cluster(gateCluster, "downstream")
		s.releases(gateCluster, apfRelease("flowcontrol.apiserver.k8s.io/v1beta3"))
		out = append(out, s)
	}
	for _, positive := range []bool{true, false} {
		// A Fleet bundle from a GitRepo, its files stored base64+gz as Fleet stores them, and a
		// CRD whose new version drops a stored one.
		fc := downstream(clusterID(gateCluster), gateCluster, ago(3*time.Minute))
		bd := bundleDeployment{cluster: fc, bundle: "platform-apf", bundleNS: "fleet-default", defaultNS: "kube-system", created: ago(60 * 24 * time.Hour), state: "ready", at: ago(2 * time.Hour), gen: 4}
		crdBD := bundleDeployment{cluster: fc, bundle: "platform-widgets-crd", bundleNS: "fleet-default", defaultNS: "kube-system", created: ago(60 * 24 * time.Hour), state: "ready", at: ago(2 * time.Hour), gen: 2}
		var s *scenario
		apiVersion := "flowcontrol.apiserver.k8s.io/v1beta3"
		stored := []string{"v1", "v2"}
		if positive {
			s = newScenario("api/real-k8s132-fleet-bundle-target-positive", deprecationGuide, `
The platform GitRepo's bundle platform-apf carries apf/flowschema.yaml with a
flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema (stored base64+gz in the Bundle, as Fleet stores
resources), deployed to prod-ap-1 whose RKE2 server Plan moves it to v1.32: the file in Git must
change before the upgrade. The platform-widgets-crd bundle stages a widgets.apps.example.com CRD
that serves only v2, while the cluster's CRD still lists v1 in status.storedVersions: the API
server would reject the new CRD until the objects are migrated and v1 trimmed.`)
			s.expect.RootCauses = []string{"api/removed-in-target"}
			s.expect.Findings = []string{"crd/version-not-served"}
			s.expect.Forbid = []string{"api/removed", "fleet/bundle-err-applied"}
		} else {
			s = newScenario("api/real-k8s132-fleet-bundle-target-healthy", deprecationGuide, `
Look-alike: the bundle's file was changed to flowcontrol.apiserver.k8s.io/v1, and the CRD's
objects were migrated to v2 and status.storedVersions trimmed to [v2]: the new CRD drops nothing
that is stored, and nothing the upgrade removes is in use.`)
			s.expect.Forbid = []string{"api/removed-in-target", "api/removed", "crd/version-not-served"}
			s.expect.MaxSeverity = "info"
			apiVersion, stored = "flowcontrol.apiserver.k8s.io/v1", []string{"v2"}
		}
		s.cluster("local", "management")
		s.cluster(gateCluster, "downstream")
		s.management([]fleetCluster{fc}, []bundleDeployment{bd, crdBD})
		fs := "apiVersion: " + apiVersion + "\nkind: FlowSchema\nmetadata:\n  name: platform-batch\nspec:\n  matchingPrecedence: 900\n  priorityLevelConfiguration:\n    name: workload-low\n"
		s.add(s.in("local", "fleet-default/bundles.fleet.cattle.io.yaml"),
			bundle("platform-apf", "platform", []obj{{"name": "apf/flowschema.yaml", "content": gz64(fs), "encoding": "base64+gz"}}),
			bundle("platform-widgets-crd", "platform", []obj{{"name": "crds/widgets.yaml", "content": widgetsCRDv2}}))
		s.add(s.in(gateCluster, "nodes.yaml"), nodes(gateCluster, k8s131, 3, ago(300*24*time.Hour))...)
		s.add(s.in(gateCluster, "system-upgrade/plans.yaml"), rke2ServerPlan(k8s132))
		s.add(s.in(gateCluster, "customresourcedefinitions.yaml"),
			crd("widgets.apps.example.com", "apps.example.com", "widgets", "Widget", []obj{crdVersion("v1", true, false), crdVersion("v2", true, true)}, stored))
		out = append(out, s)
	}
	return out
}
