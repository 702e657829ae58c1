package main

// prod-ap-1: the upgrade gate. A healthy RKE2 v1.31 cluster whose system-upgrade-controller
// server Plan was just moved to v1.32.5+rke2r1. Its platform-apf release (deployed by the
// platform GitRepo's bundle) still has a FlowSchema and a PriorityLevelConfiguration in
// flowcontrol.apiserver.k8s.io/v1beta3, which Kubernetes v1.32 no longer serves (deprecation
// guide, v1.32), and its widgets.apps.example.com CRD still lists v1alpha1 in
// status.storedVersions though v1alpha1 is no longer served. Nothing is stuck yet: preflight
// must say no-go before the upgrade starts.

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	fleet "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	gateDir        = "prod-ap-1"
	gateTarget     = "v1.32.5+rke2r1"
	gateStatusAt   = "2026-11-28T07:05:48Z"
	gateBDAt       = "2026-11-28T07:05:31Z"
	gateUpgradedAt = "2026-11-28T07:05:11Z"
	gateRepo       = "platform"
	gateBundle     = "platform-apf"
	gatePath       = "apf/flowschema.yaml"
)

// gateFleetCluster is prod-ap-1's Fleet Cluster.
func gateFleetCluster() *fcl {
	return &fcl{ns: "fleet-default", name: "c-m-6k2pz7va", display: gateDir, mgmt: "c-m-6k2pz7va", dir: gateDir,
		created: "2026-07-02T09:12:40Z", agentNS: "cattle-fleet-system",
		resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
		lastSeen: "2026-11-28T09:25:37Z", redeployGen: 1, importedAt: "2026-07-02T09:14:21Z",
		extraLabels: map[string]string{"env": "production", "region": "ap-southeast"}, regAt: "2026-07-02T09:14:48Z"}
}

// gateAgentBD is the state of prod-ap-1's agent BundleDeployment: upgraded and ready.
func gateAgentBD(rel func(int) string) bdSpec {
	return bdSpec{deployedAt: gateBDAt, ready: true, readySince: gateStatusAt, monitoredAt: gateStatusAt, release: rel(4)}
}

// flowManifestYAML is the platform-apf chart's FlowSchema and PriorityLevelConfiguration.
func flowManifestYAML(apiVersion string) string {
	return fmt.Sprintf(`apiVersion: %[1]s
kind: PriorityLevelConfiguration
metadata:
  name: platform-batch
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse:
      type: Queue
      queuing:
        queues: 16
        handSize: 4
        queueLengthLimit: 50
---
apiVersion: %[1]s
kind: FlowSchema
metadata:
  name: platform-batch
spec:
  matchingPrecedence: 900
  priorityLevelConfiguration:
    name: platform-batch
  distinguisherMethod:
    type: ByUser
  rules:
  - subjects:
    - kind: ServiceAccount
      serviceAccount:
        name: batch-runner
        namespace: batch
    resourceRules:
    - verbs: ["*"]
      apiGroups: ["*"]
      resources: ["*"]
      namespaces: ["*"]
`, apiVersion)
}

// gateBundle is the platform GitRepo's bundle for prod-ap-1, as Fleet's GitJob builds it:
// its file stored base64+gz under its path in the repository.
func gateBundleSpec(c *fcl) *bundleSpec {
	res := []fleet.BundleResource{{Name: gatePath, Content: base64.StdEncoding.EncodeToString(gz([]byte(flowManifestYAML("flowcontrol.apiserver.k8s.io/v1beta3")))), Encoding: "base64+gz"}}
	b := newBundleSpec(gateBundle, "fleet-default", "2026-07-02T09:30:02Z", 2,
		fleet.BundleDeploymentOptions{DefaultNamespace: "kube-system", Helm: &fleet.HelmOptions{ReleaseName: gateBundle}}, res,
		[]fleet.BundleTarget{{ClusterName: c.name}})
	b.labels = map[string]string{"fleet.cattle.io/repo-name": gateRepo, "fleet.cattle.io/commit": sha1hex("platform@2026-07-02")}
	return b
}

// gateLocal adds the platform GitRepo's bundle, its BundleDeployment and Content.
func (w *world) gateLocal(o *out) {
	c := w.byName[gateFleetCluster().name]
	b := gateBundleSpec(c)
	bd := o.bundleDeployment(b, c, bdSpec{created: "2026-07-02T09:30:03Z", generation: 2, deployedAt: "2026-07-02T09:31:10Z",
		ready: true, readySince: "2026-07-02T09:31:30Z", monitoredAt: "2026-07-02T09:31:30Z", release: "kube-system/" + gateBundle + ":2",
		resources: []fleet.BundleDeploymentResource{
			{Kind: "FlowSchema", APIVersion: "flowcontrol.apiserver.k8s.io/v1beta3", Name: "platform-batch", CreatedAt: mt("2026-07-02T09:31:10Z")},
			{Kind: "PriorityLevelConfiguration", APIVersion: "flowcontrol.apiserver.k8s.io/v1beta3", Name: "platform-batch", CreatedAt: mt("2026-07-02T09:31:10Z")},
		}})
	o.bundle(b, []*fleet.BundleDeployment{bd}, w.byName, "2026-07-02T09:31:30Z")
	o.content(b, 1, "2026-07-02T09:30:02Z")

	// The widgets CRD bundle: the platform team committed the chart's new CRD (v1beta1 and v1;
	// v1alpha1 gone) and paused the bundle until the upgrade window, so Fleet staged it
	// (stagedDeploymentID) while the BundleDeployment keeps the deployed one.
	old := widgetsBundleSpec(c, widgetsCRDYAML(true), 3)
	staged := widgetsBundleSpec(c, widgetsCRDYAML(false), 4)
	wbd := o.bundleDeployment(staged, c, bdSpec{created: "2026-07-03T11:19:40Z", generation: 4, deployedAt: "2026-07-03T11:20:00Z",
		ready: true, readySince: "2026-07-03T11:20:10Z", monitoredAt: "2026-07-03T11:20:10Z", release: "kube-system/" + widgetsBundle + ":1",
		resources: []fleet.BundleDeploymentResource{{Kind: "CustomResourceDefinition", APIVersion: "apiextensions.k8s.io/v1", Name: "widgets.apps.example.com", CreatedAt: mt("2026-07-03T11:20:00Z")}}})
	oldID := wbd.Spec.DeploymentID
	oldID = old.contentID + oldID[len(staged.contentID):]
	wbd.Spec.DeploymentID, wbd.Status.AppliedDeploymentID, wbd.Spec.Paused = oldID, oldID, true
	wb := o.bundle(staged, []*fleet.BundleDeployment{wbd}, w.byName, "2026-11-27T16:02:30Z")
	wb.Spec.Paused = true
	o.content(old, 1, "2026-07-03T11:19:39Z")
	o.content(staged, 1, "2026-11-27T16:02:29Z")
}

// gateGitRepo is the GitRepo both bundles come from: the API gate's guided fix names its
// repository, branch and the file to change. Written last, so the resourceVersions of the
// objects before it do not move.
func (w *world) gateGitRepo(o *out) {
	c := w.byName[gateFleetCluster().name]
	// The GitRepo both bundles come from: the API gate's guided fix names its repository,
	// branch and the file to change.
	o.add("gitrepos", &fleet.GitRepo{
		TypeMeta:   tm("fleet.cattle.io/v1alpha1", "GitRepo"),
		ObjectMeta: o.meta("GitRepo", gateRepo, "fleet-default", "2026-07-02T09:29:40Z", nil, nil),
		Spec: fleet.GitRepoSpec{Repo: "https://git.example.com/platform/fleet-platform.git", Branch: "main",
			Paths: []string{"apf", "crds"}, Targets: []fleet.GitTarget{{ClusterName: c.name}}},
		Status: fleet.GitRepoStatus{Commit: sha1hex("platform-widgets@4")},
	})
}

const widgetsBundle = "platform-widgets-crd"

func widgetsBundleSpec(c *fcl, crd string, gen int64) *bundleSpec {
	b := newBundleSpec(widgetsBundle, "fleet-default", "2026-07-03T11:19:38Z", gen,
		fleet.BundleDeploymentOptions{DefaultNamespace: "kube-system", Helm: &fleet.HelmOptions{ReleaseName: widgetsBundle}},
		[]fleet.BundleResource{{Name: "crds/widgets.yaml", Content: crd}}, []fleet.BundleTarget{{ClusterName: c.name}})
	b.labels = map[string]string{"fleet.cattle.io/repo-name": gateRepo, "fleet.cattle.io/commit": sha1hex("platform-widgets@" + fmt.Sprint(gen))}
	return b
}

// widgetsCRDYAML is the widgets chart's CRD: the deployed one still lists v1alpha1 (not
// served), the staged one drops it and adds v1.
func widgetsCRDYAML(deployed bool) string {
	versions := `  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`
	if deployed {
		versions = `  - name: v1alpha1
    served: false
    storage: false
    deprecated: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
` + versions
	} else {
		versions = strings.Replace(versions, "storage: true", "storage: false", 1) + `  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`
	}
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.apps.example.com
spec:
  group: apps.example.com
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
  scope: Namespaced
  versions:
` + versions
}

// gate builds prod-ap-1: healthy, upgraded to Fleet v0.16 like staging-1, about to move to
// Kubernetes v1.32.
func (w *world) gate(c *fcl, o *out) {
	clusterCreated := "2026-07-02T09:05:18Z"
	nodes := []nodeSpec{
		rke2Node("prod-ap-1-cp-0", "10.60.1.10", "10.42.0.0/24", append([]string{"worker"}, cpRoles...), 8, 32863700, "2026-07-02T09:06:02Z", "2026-11-10T02:11:40Z"),
		rke2Node("prod-ap-1-worker-0", "10.60.1.20", "10.42.1.0/24", []string{"worker"}, 16, 65727400, "2026-07-02T09:09:44Z", "2026-11-10T02:19:05Z"),
	}
	w.baseDownstream(c, o, nodes, clusterCreated)
	o.namespace("system-upgrade", "2026-07-02T09:20:10Z", nil, nil)

	// The Fleet agent, upgraded to v0.16 this morning.
	dep := depSpec{created: "2026-07-02T09:14:23Z", generation: 8, revision: "4"}
	up := mustTime(gateUpgradedAt)
	newHash := rsHash(c.name + "4")
	dep.version, dep.release = controllerVer, "fleet-agent-"+c.name
	dep.status = appsv1.DeploymentStatus{
		Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			depCond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.", rfc(mustTime(c.importedAt).Add(70*time.Second)), rfc(mustTime(c.importedAt).Add(70*time.Second))),
			depCond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", fmt.Sprintf("ReplicaSet \"fleet-agent-%s\" has successfully progressed.", newHash), rfc(up.Add(20*time.Second)), dep.created),
		},
	}
	d := o.agentDeployment(c, dep)
	o.replicaSet(d, rsSpec{hash: rsHash(c.name + "3"), revision: "3", tpl: agentPodTemplate(c.agentOpts(oldAgentVer)), created: "2026-10-06T06:37:02Z"})
	rs := o.replicaSet(d, rsSpec{hash: newHash, revision: "4", tpl: agentPodTemplate(c.agentOpts(controllerVer)), created: rfc(up.Add(time.Second)), replicas: 1, ready: 1})
	podName := rs.Name + "-" + podSfx(c.name+"4")
	o.pod(ctrlRef(rs, "apps/v1", "ReplicaSet"), rs.Spec.Template, c.agentNS, podState{
		name: podName, created: rfc(up.Add(time.Second)), node: "prod-ap-1-worker-0", hostIP: "10.60.1.20", podIP: "10.42.1.37",
		phase: corev1.PodRunning, started: rfc(up.Add(5 * time.Second)), ready: true, schedSince: rfc(up.Add(time.Second)), readySince: rfc(up.Add(20 * time.Second)),
	})
	first := mustTime(c.importedAt).Add(-time.Second)
	w.agentRelease(c, o, 3, release.StatusSuperseded, oldAgentVer, rfc(first), "2026-10-06T06:37:01Z", "Upgrade complete", "2026-10-06T06:37:01Z", rfc(up.Add(time.Second)))
	w.agentRelease(c, o, 4, release.StatusDeployed, controllerVer, rfc(first), gateUpgradedAt, "Upgrade complete", gateUpgradedAt, rfc(up.Add(time.Second)))
	var l logw
	agentStartup(&l, up.Add(5*time.Second+117*time.Millisecond), c.agentNS, podName, c.name, c.clusterNS)
	o.log(c.agentNS, podName, "fleet-agent", false, l.String())

	// The platform-apf release, as the agent's Helm deployer wrote it: revision 1 at import,
	// revision 2 when the bundle's chart changed; both still v1beta3.
	b := gateBundleSpec(c)
	// Helm writes a "# Source:" line before each document of the rendered manifest.
	src := "---\n# Source: " + gateBundle + "/templates/" + gatePath + "\n"
	manifest := src + strings.ReplaceAll(flowManifestYAML("flowcontrol.apiserver.k8s.io/v1beta3"), "---\n", src)
	for _, r := range []struct {
		rev             int
		status          release.Status
		last, created   string
		modified, descr string
	}{
		{1, release.StatusSuperseded, "2026-07-02T09:31:08Z", "2026-07-02T09:31:08Z", "2026-09-14T03:02:11Z", "Install complete"},
		{2, release.StatusDeployed, "2026-09-14T03:02:10Z", "2026-09-14T03:02:10Z", "2026-09-14T03:02:11Z", "Upgrade complete"},
	} {
		o.add("secrets", o.helmReleaseSecret(relSpec{
			name: gateBundle, ns: "kube-system", version: r.rev, status: r.status,
			firstDeployed: "2026-07-02T09:31:08Z", lastDeployed: r.last, description: r.descr,
			chart:    fleetBundleChart(gateBundle, b.contentID, "kube-system"),
			config:   map[string]any{},
			manifest: manifest,
			created:  r.created, modifiedAt: r.modified,
		}))
	}

	// The system-upgrade-controller server Plan, moved to v1.32 by the platform team.
	o.add("plans", gatePlan())

	// RKE2's and the system-upgrade-controller's CRDs.
	for _, d := range []struct{ plural, group, kind, scope string }{
		{"addons", "k3s.cattle.io", "Addon", "Namespaced"},
		{"etcdsnapshotfiles", "k3s.cattle.io", "ETCDSnapshotFile", "Cluster"},
		{"helmchartconfigs", "helm.cattle.io", "HelmChartConfig", "Namespaced"},
		{"helmcharts", "helm.cattle.io", "HelmChart", "Namespaced"},
		{"plans", "upgrade.cattle.io", "Plan", "Namespaced"},
	} {
		o.add("customresourcedefinitions", o.crd(d.plural, d.group, "v1", d.kind, d.scope, "2026-07-02T09:05:50Z", nil, nil))
	}

	// A CRD whose v1alpha1 is no longer served while objects may still be stored in it.
	widgets := o.crd("widgets", "apps.example.com", "v1beta1", "Widget", "Namespaced", "2026-07-03T11:20:00Z", nil, nil)
	spec := widgets["spec"].(map[string]any)
	v1beta1 := spec["versions"].([]any)[0].(map[string]any)
	v1alpha1 := map[string]any{"name": "v1alpha1", "served": false, "storage": false, "deprecated": true,
		"schema": v1beta1["schema"], "subresources": v1beta1["subresources"]}
	spec["versions"] = []any{v1alpha1, v1beta1}
	widgets["status"].(map[string]any)["storedVersions"] = []any{"v1alpha1", "v1beta1"}
	o.add("customresourcedefinitions", widgets)
}

// gatePlan is the RKE2 server Plan of Rancher's and RKE2's docs, at version v1.32.5+rke2r1,
// as system-upgrade-controller v0.20 writes its status just after the version changed.
func gatePlan() u {
	created := "2026-07-02T09:20:40Z"
	changed := "2026-11-28T09:12:05Z"
	return u{
		"apiVersion": "upgrade.cattle.io/v1",
		"kind":       "Plan",
		"metadata": map[string]any{
			"name": "server-plan", "namespace": "system-upgrade", "generation": 3,
			"uid": "4f0d7c1e-6a3b-4e55-9d0c-" + sha1hex("server-plan")[:12], "resourceVersion": "48172093",
			"creationTimestamp": created, "labels": map[string]any{"rke2-upgrade": "server"},
		},
		"spec": map[string]any{
			"concurrency": 1, "cordon": true, "serviceAccountName": "system-upgrade", "version": gateTarget,
			"nodeSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "In", "values": []any{"true"}}}},
			"tolerations":  []any{map[string]any{"key": "CriticalAddonsOnly", "operator": "Exists"}},
			"upgrade":      map[string]any{"image": "rancher/rke2-upgrade"},
		},
		"status": map[string]any{
			"latestVersion": "v1.32.5-rke2r1", "latestHash": sha256hex("server-plan" + gateTarget)[:56],
			"conditions": []any{
				map[string]any{"type": "LatestResolved", "status": "True", "reason": "Version", "lastUpdateTime": changed},
				map[string]any{"type": "Validated", "status": "True", "reason": "PlanIsValid", "lastUpdateTime": created},
			},
		},
	}
}
