package main

import (
	"fmt"
	"path/filepath"
	"time"

	fleet "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	"github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1/summary"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }

// the 14 CRDs of charts/fleet-crd (the kinds registered in pkg/apis v0.16.0)
var fleetCRDs = []struct{ plural, kind, scope string }{
	{"bundledeployments", "BundleDeployment", "Namespaced"},
	{"bundlenamespacemappings", "BundleNamespaceMapping", "Namespaced"},
	{"bundles", "Bundle", "Namespaced"},
	{"clustergroups", "ClusterGroup", "Namespaced"},
	{"clusterregistrations", "ClusterRegistration", "Namespaced"},
	{"clusterregistrationtokens", "ClusterRegistrationToken", "Namespaced"},
	{"clusters", "Cluster", "Namespaced"},
	{"contents", "Content", "Cluster"},
	{"gitreporestrictions", "GitRepoRestriction", "Namespaced"},
	{"gitrepos", "GitRepo", "Namespaced"},
	{"helmops", "HelmOp", "Namespaced"},
	{"imagescans", "ImageScan", "Namespaced"},
	{"policies", "Policy", "Namespaced"},
	{"schedules", "Schedule", "Namespaced"},
}

func (w *world) local() error {
	lc := w.byName["local"]
	o := newOut(filepath.Join(w.outDir, "clusters", "local"), false, 188204117)

	// --- namespaces ---------------------------------------------------------
	created := "2026-01-12T08:55:30Z"
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		o.namespace(ns, created, nil, nil)
	}
	for _, ns := range []string{"cattle-system", "cattle-fleet-system", "cattle-fleet-local-system", "cattle-fleet-clusters-system", "fleet-local", "fleet-default"} {
		o.namespace(ns, "2026-01-12T09:08:40Z", nil, nil)
	}
	for _, c := range w.clusters {
		o.namespace(c.clusterNS, rfc(mustTime(c.created).Add(40*time.Second)),
			map[string]string{fleet.ManagedLabel: "true"},
			map[string]string{fleet.ClusterNamespaceAnnotation: c.ns, fleet.ClusterAnnotation: c.name})
	}

	// --- nodes --------------------------------------------------------------
	for i := 1; i <= 3; i++ {
		o.node(rke2Node(fmt.Sprintf("rancher-mgmt-%d", i), fmt.Sprintf("10.10.1.%d", 10+i), fmt.Sprintf("10.42.%d.0/24", i-1),
			append([]string{"worker"}, cpRoles...), 8, 32863700, fmt.Sprintf("2026-01-12T08:5%d:02Z", 4+i), "2026-11-15T03:20:11Z"))
	}

	// --- CRDs ---------------------------------------------------------------
	helmCRD := map[string]string{"app.kubernetes.io/managed-by": "Helm"}
	helmCRDAnn := map[string]string{"meta.helm.sh/release-name": "fleet-crd", "meta.helm.sh/release-namespace": "cattle-fleet-system"}
	for _, d := range fleetCRDs {
		ann := map[string]string{"controller-gen.kubebuilder.io/version": "v0.21.0"}
		for k, v := range helmCRDAnn {
			ann[k] = v
		}
		o.add("customresourcedefinitions", o.crd(d.plural, "fleet.cattle.io", "v1alpha1", d.kind, d.scope, "2026-01-12T09:09:12Z", helmCRD, ann))
	}
	for _, d := range []struct{ plural, group, version, kind, scope string }{
		{"clusters", "management.cattle.io", "v3", "Cluster", "Cluster"},
		{"settings", "management.cattle.io", "v3", "Setting", "Cluster"},
		{"clusters", "provisioning.cattle.io", "v1", "Cluster", "Namespaced"},
		{"plans", "upgrade.cattle.io", "v1", "Plan", "Namespaced"},
		{"helmcharts", "helm.cattle.io", "v1", "HelmChart", "Namespaced"},
		{"addons", "k3s.cattle.io", "v1", "Addon", "Namespaced"},
	} {
		o.add("customresourcedefinitions", o.crd(d.plural, d.group, d.version, d.kind, d.scope, "2026-01-12T08:58:20Z", nil, nil))
	}

	// --- bundles & bundle deployments --------------------------------------
	mon, ing := appBundles()
	agentNew := map[string]*bundleSpec{}
	agentOld := map[string]*bundleSpec{}
	for _, c := range w.clusters {
		agentNew[c.name] = agentBundle(c, controllerVer)
		agentOld[c.name] = agentBundle(c, oldAgentVer)
	}
	agentRes := func(c *fcl, at string) []fleet.BundleDeploymentResource {
		role := safeConcatName(c.agentNS, "fleet-agent", "role")
		t := mt(at)
		return []fleet.BundleDeploymentResource{
			{Kind: "ClusterRole", APIVersion: "rbac.authorization.k8s.io/v1", Name: role, CreatedAt: t},
			{Kind: "ClusterRoleBinding", APIVersion: "rbac.authorization.k8s.io/v1", Name: role + "-binding", CreatedAt: t},
			{Kind: "Deployment", APIVersion: "apps/v1", Namespace: c.agentNS, Name: "fleet-agent", CreatedAt: t},
			{Kind: "NetworkPolicy", APIVersion: "networking.k8s.io/v1", Namespace: c.agentNS, Name: "default-allow-all", CreatedAt: t},
			{Kind: "ServiceAccount", APIVersion: "v1", Namespace: c.agentNS, Name: "default", CreatedAt: t},
			{Kind: "ServiceAccount", APIVersion: "v1", Namespace: c.agentNS, Name: "fleet-agent", CreatedAt: t},
		}
	}
	agentBDs := map[string]*fleet.BundleDeployment{}
	var monBDs, ingBDs []*fleet.BundleDeployment
	for _, c := range w.clusters {
		b := agentNew[c.name]
		oldID := agentOld[c.name].contentID
		oh := optionsHash(optsFor(b))
		rel := func(v int) string { return fmt.Sprintf("%s/%s:%d", c.agentNS, b.name, v) }
		bdCreated := rfc(mustTime(c.created).Add(152 * time.Second))
		var s bdSpec
		switch c.dir {
		case "local":
			s = bdSpec{deployedAt: "2026-11-28T07:04:31Z", ready: true, readySince: "2026-11-28T07:04:52Z", monitoredAt: "2026-11-28T07:04:52Z", release: rel(10)}
		case "prod-eu-1":
			// ErrApplied: the Helm upgrade cannot start, the release is pending-upgrade
			s = bdSpec{oldManifest: oldID, oldOptsHash: oh, deployedAt: "2026-10-06T06:36:02Z",
				deployErr: "another operation (install/upgrade/rollback) is in progress", errSince: "2026-11-28T07:13:02Z",
				ready: true, readySince: "2026-10-06T06:36:20Z", monitoredAt: "2026-10-06T06:36:20Z", release: rel(3)}
		case "prod-us-1":
			// WaitApplied: deployed by the old agent, which died before reporting it
			s = bdSpec{oldManifest: oldID, oldOptsHash: oh, deployedAt: "2026-10-06T06:38:19Z",
				ready: true, readySince: "2026-10-06T06:38:41Z", monitoredAt: "2026-10-06T06:38:41Z", release: rel(2)}
		case "edge-arm-1":
			nr := fleet.NonReadyStatus{
				UID: typesUID(w.edgeDeployUID), Kind: "Deployment", APIVersion: "apps/v1", Namespace: c.agentNS, Name: "fleet-agent",
				Summary: summary.Summary{State: "in-progress", Error: true, Transitioning: true,
					Message: []string{fmt.Sprintf("ReplicaSet %q has timed out progressing.", w.edgeNewRS)}},
			}
			s = bdSpec{deployedAt: "2026-11-28T07:14:01Z", ready: false, nonReady: []fleet.NonReadyStatus{nr},
				readyMsg: nr.String(), readySince: "2026-11-28T07:24:33Z", monitoredAt: "2026-11-28T07:14:33Z", release: rel(4)}
		case "staging-1":
			s = bdSpec{deployedAt: "2026-11-28T07:06:12Z", ready: true, readySince: "2026-11-28T07:06:33Z", monitoredAt: "2026-11-28T07:06:33Z", release: rel(6)}
		case "dev-1":
			s = bdSpec{deployedAt: "2026-11-28T07:07:40Z", ready: true, readySince: "2026-11-28T07:07:57Z", monitoredAt: "2026-11-28T07:07:57Z", release: rel(3)}
		case gateDir:
			s = gateAgentBD(rel)
		}
		s.created, s.generation = bdCreated, 14
		s.resources = agentRes(c, bdCreated)
		agentBDs[c.name] = o.bundleDeployment(b, c, s)

		if c.ns != "fleet-default" {
			continue
		}
		appAt := "2026-08-20T12:01:04Z"
		if mustTime(c.created).After(mustTime(appAt)) {
			appAt = rfc(mustTime(c.created).Add(5 * time.Minute))
		}
		monBDs = append(monBDs, o.bundleDeployment(mon, c, bdSpec{created: "2026-08-20T12:00:15Z", generation: 6, deployedAt: "2026-10-14T09:30:12Z",
			ready: true, readySince: "2026-10-14T09:30:40Z", monitoredAt: "2026-10-14T09:30:40Z", release: "monitoring/monitoring-stack:4",
			resources: []fleet.BundleDeploymentResource{{Kind: "DaemonSet", APIVersion: "apps/v1", Namespace: "monitoring", Name: "node-exporter", CreatedAt: mt(appAt)}}}))
		ingBDs = append(ingBDs, o.bundleDeployment(ing, c, bdSpec{created: "2026-08-20T12:00:17Z", generation: 3, deployedAt: appAt,
			ready: true, readySince: appAt, monitoredAt: appAt, release: "ingress-config/ingress-config:1",
			resources: []fleet.BundleDeploymentResource{{Kind: "ConfigMap", APIVersion: "v1", Namespace: "ingress-config", Name: "ingress-defaults", CreatedAt: mt(appAt)}}}))
	}
	byName := w.byName
	contentRefs := map[string]int{}
	var contentOrder []*bundleSpec
	for _, c := range w.clusters {
		b := agentNew[c.name]
		if contentRefs[b.contentID] == 0 {
			contentOrder = append(contentOrder, b)
		}
		contentRefs[b.contentID]++
	}
	for _, b := range contentOrder {
		o.content(b, contentRefs[b.contentID], "2026-11-28T07:02:41Z")
	}
	for _, c := range w.clusters {
		at := map[string]string{"local": "2026-11-28T07:04:52Z", "prod-eu-1": "2026-11-28T07:13:02Z", "prod-us-1": "2026-11-28T07:02:42Z",
			"edge-arm-1": "2026-11-28T07:24:33Z", "staging-1": "2026-11-28T07:06:33Z", "dev-1": "2026-11-28T07:07:57Z", gateDir: gateStatusAt}[c.dir]
		o.bundle(agentNew[c.name], []*fleet.BundleDeployment{agentBDs[c.name]}, byName, at)
	}
	o.bundle(mon, monBDs, byName, "2026-10-14T09:30:40Z")
	o.bundle(ing, ingBDs, byName, "2026-08-20T12:05:31Z")
	o.content(mon, len(monBDs), "2026-10-14T09:30:05Z")
	o.content(ing, len(ingBDs), "2026-08-20T12:00:16Z")
	w.gateLocal(o)

	// --- Fleet clusters, registrations, cluster group -----------------------
	var defaultClusters []any
	var regs []any
	for _, c := range w.clusters {
		statusAt := map[string]string{"local": "2026-11-28T07:04:52Z", "prod-eu-1": "2026-11-28T07:13:02Z", "prod-us-1": "2026-11-28T07:02:42Z",
			"edge-arm-1": "2026-11-28T07:24:33Z", "staging-1": "2026-11-28T07:06:33Z", "dev-1": "2026-11-28T07:07:57Z", gateDir: gateStatusAt}[c.dir]
		fc := o.fleetCluster(c, statusAt, c.lastSeen)
		if c.dir == "prod-eu-1" {
			fc.ManagedFields = []metav1.ManagedFieldsEntry{
				{Manager: "rancher", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "fleet.cattle.io/v1alpha1", Time: mtp("2026-09-02T16:39:58Z"), FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:objectset.rio.cattle.io/id":{},"f:objectset.rio.cattle.io/owner-gvk":{},"f:objectset.rio.cattle.io/owner-name":{},"f:objectset.rio.cattle.io/owner-namespace":{}},"f:labels":{".":{},"f:env":{},"f:management.cattle.io/cluster-display-name":{},"f:management.cattle.io/cluster-name":{},"f:objectset.rio.cattle.io/hash":{},"f:region":{}}},"f:spec":{".":{},"f:kubeConfigSecret":{},"f:kubeConfigSecretNamespace":{}}}`)}},
				{Manager: "fleetcontroller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "fleet.cattle.io/v1alpha1", Time: mtp("2026-09-02T16:40:12Z"), FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:finalizers":{".":{},"v:\"fleet.cattle.io/cluster-finalizer\"":{}}},"f:spec":{"f:clientID":{},"f:redeployAgentGeneration":{}}}`)}},
				{Manager: "fleetcontroller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "fleet.cattle.io/v1alpha1", Time: mtp("2026-11-28T07:13:02Z"), FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:agentDeployedGeneration":{},"f:agentMigrated":{},"f:agentNamespaceMigrated":{},"f:agentTLSMode":{},"f:apiServerCAHash":{},"f:apiServerURL":{},"f:cattleNamespaceMigrated":{},"f:conditions":{},"f:desiredReadyGitRepos":{},"f:desiredReadyHelmOps":{},"f:display":{".":{},"f:readyBundles":{},"f:state":{}},"f:garbageCollectionInterval":{},"f:namespace":{},"f:readyGitRepos":{},"f:readyHelmOps":{},"f:resourceCounts":{},"f:summary":{}}}`)}},
				{Manager: "fleetagent", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "fleet.cattle.io/v1alpha1", Time: mtp(c.lastSeen), FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:agent":{".":{},"f:lastSeen":{},"f:namespace":{}}}}`)}},
			}
		}
		if c.ns == "fleet-local" {
			o.single(filepath.Join("fleet-local", "cluster-local.yaml"), fc)
		} else {
			defaultClusters = append(defaultClusters, fc)
			o.add("clusters", fc)
		}
		regs = append(regs, o.clusterRegistration(c))
	}
	_ = defaultClusters
	o.multiDoc(filepath.Join("fleet-default", "clusterregistrations.yaml"), regs[1:]...)
	o.multiDoc(filepath.Join("fleet-local", "clusterregistrations.yaml"), regs[0])
	cg := &fleet.ClusterGroup{
		TypeMeta:   tm("fleet.cattle.io/v1alpha1", "ClusterGroup"),
		ObjectMeta: o.meta("ClusterGroup", "default", "fleet-local", "2026-01-12T09:14:07Z", map[string]string{"objectset.rio.cattle.io/hash": sha1hex("fleet-cluster/fleet-local/local")}, map[string]string{"objectset.rio.cattle.io/id": "fleet-cluster", "objectset.rio.cattle.io/owner-gvk": "provisioning.cattle.io/v1, Kind=Cluster", "objectset.rio.cattle.io/owner-name": "local", "objectset.rio.cattle.io/owner-namespace": "fleet-local"}),
		Spec:       fleet.ClusterGroupSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": "local"}}},
		Status: fleet.ClusterGroupStatus{ClusterCount: 1, NonReadyClusterCount: 0, Summary: fleet.BundleSummary{Ready: 1, DesiredReady: 1},
			Display: fleet.ClusterGroupDisplay{ReadyClusters: "1/1", ReadyBundles: "1/1"}},
	}
	o.add("clustergroups", cg)

	// --- fleet controller -----------------------------------------------------
	w.fleetController(o)

	// --- Helm releases of the Rancher-installed Fleet charts -----------------
	fleetChart := func(name, ver, app string) *chart.Metadata {
		return &chart.Metadata{Name: name, Version: ver, AppVersion: app, APIVersion: "v2",
			Description: "Fleet Manager - GitOps at Scale", Home: "https://github.com/rancher/fleet",
			Annotations: map[string]string{"catalog.cattle.io/hidden": "true", "catalog.cattle.io/namespace": "cattle-fleet-system", "catalog.cattle.io/release-name": name, "catalog.cattle.io/os": "linux"}}
	}
	for _, r := range []struct {
		name string
		v    int
		st   release.Status
		ver  string
		app  string
		at   string
		mod  string
	}{
		{"fleet-crd", 6, release.StatusSuperseded, fleetChartOld, "0.15.3", "2026-10-06T06:30:41Z", "2026-11-28T07:01:10Z"},
		{"fleet-crd", 7, release.StatusDeployed, fleetChartNew, "0.16.0", "2026-11-28T07:01:09Z", "2026-11-28T07:01:10Z"},
		{"fleet", 6, release.StatusSuperseded, fleetChartOld, "0.15.3", "2026-10-06T06:31:12Z", "2026-11-28T07:01:46Z"},
		{"fleet", 7, release.StatusDeployed, fleetChartNew, "0.16.0", "2026-11-28T07:01:44Z", "2026-11-28T07:01:46Z"},
	} {
		manifest := "---\n# Source: " + r.name + "/templates/crds.yaml\n# (templates elided in this example)\n"
		if r.name == "fleet" {
			manifest = "---\n# Source: fleet/templates/deployment.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: fleet-controller\n  namespace: cattle-fleet-system\nspec:\n  template:\n    spec:\n      containers:\n      - name: fleet-controller\n        image: 'rancher/fleet:v" + r.app + "'\n"
		}
		chartName := r.name
		o.add("secrets", o.helmReleaseSecret(relSpec{
			name: r.name, ns: "cattle-fleet-system", version: r.v, status: r.st,
			firstDeployed: "2026-01-12T09:09:05Z", lastDeployed: r.at, description: "Upgrade complete",
			chart:    fleetChart(chartName, r.ver, r.app),
			config:   map[string]any{"apiServerURL": rancherURL, "apiServerCA": "", "global": map[string]any{"cattle": map[string]any{"systemDefaultRegistry": ""}}, "bootstrap": map[string]any{"agentNamespace": "cattle-fleet-local-system"}},
			manifest: manifest, created: r.at, modifiedAt: r.mod,
		}))
	}

	// --- the local cluster's own agent ----------------------------------------
	first := "2026-01-12T09:16:30Z"
	w.agentRelease(lc, o, 9, release.StatusSuperseded, oldAgentVer, first, "2026-10-06T06:33:40Z", "Upgrade complete", "2026-10-06T06:33:40Z", "2026-11-28T07:04:31Z")
	w.agentRelease(lc, o, 10, release.StatusDeployed, controllerVer, first, "2026-11-28T07:04:30Z", "Upgrade complete", "2026-11-28T07:04:30Z", "2026-11-28T07:04:31Z")
	newHash := rsHash("local10")
	dep := o.agentDeployment(lc, depSpec{created: "2026-01-12T09:16:33Z", generation: 12, revision: "10", version: controllerVer, release: "fleet-agent-local",
		status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, Conditions: []appsv1.DeploymentCondition{
			depCond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.", "2026-11-15T03:22:40Z", "2026-11-15T03:22:40Z"),
			depCond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", fmt.Sprintf("ReplicaSet \"fleet-agent-%s\" has successfully progressed.", newHash), "2026-11-28T07:04:52Z", "2026-01-12T09:16:33Z"),
		}}})
	o.replicaSet(dep, rsSpec{hash: rsHash("local9"), revision: "9", tpl: agentPodTemplate(lc.agentOpts(oldAgentVer)), created: "2026-10-06T06:33:41Z"})
	rs := o.replicaSet(dep, rsSpec{hash: newHash, revision: "10", tpl: agentPodTemplate(lc.agentOpts(controllerVer)), created: "2026-11-28T07:04:31Z", replicas: 1, ready: 1})
	podName := rs.Name + "-" + podSfx("local10")
	o.pod(ctrlRef(rs, "apps/v1", "ReplicaSet"), rs.Spec.Template, lc.agentNS, podState{
		name: podName, created: "2026-11-28T07:04:31Z", node: "rancher-mgmt-2", hostIP: "10.10.1.12", podIP: "10.42.1.201",
		phase: corev1.PodRunning, started: "2026-11-28T07:04:36Z", ready: true, schedSince: "2026-11-28T07:04:31Z", readySince: "2026-11-28T07:04:52Z",
	})
	cfg := fmt.Sprintf(`{"clientID":%q,"labels":{"management.cattle.io/cluster-display-name":"local","management.cattle.io/cluster-name":"local","name":"local","provider.cattle.io":"rke2"},"agentTLSMode":"system-store","garbageCollectionInterval":"15m0s"}`, lc.clientID())
	cm := o.configMap("fleet-agent", lc.agentNS, "2026-01-12T09:16:31Z", map[string]string{"objectset.rio.cattle.io/hash": sha1hex(agentSetID)}, map[string]string{"config": cfg})
	o.add("configmaps", cm)
	var l logw
	agentStartup(&l, mustTime("2026-11-28T07:04:36Z").Add(87*time.Millisecond), lc.agentNS, podName, lc.name, lc.clusterNS)
	o.log(lc.agentNS, podName, "fleet-agent", false, l.String())
	w.gateGitRepo(o)

	return o.flush()
}

func (w *world) fleetController(o *out) {
	ns := "cattle-fleet-system"
	img := "rancher/fleet:" + controllerVer
	env := []corev1.EnvVar{
		{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
		{Name: "CATTLE_ELECTION_LEASE_DURATION", Value: "30s"},
		{Name: "CATTLE_ELECTION_RETRY_PERIOD", Value: "10s"},
		{Name: "CATTLE_ELECTION_RENEW_DEADLINE", Value: "25s"},
	}
	ctr := func(name string, cmd ...string) corev1.Container {
		return corev1.Container{Name: name, Image: img, Command: cmd, Env: env, ImagePullPolicy: corev1.PullIfNotPresent,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true), Privileged: ptr(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			VolumeMounts:    []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}}
	}
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "fleet-controller", "fleet.cattle.io/shard-default": "true", "fleet.cattle.io/shard-id": ""}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "fleet-controller", DeprecatedServiceAccount: "fleet-controller",
			Containers: []corev1.Container{
				ctr("fleet-controller", "fleetcontroller", "--shard-id", ""),
				ctr("fleet-cleanup", "fleetcontroller", "cleanup"),
				ctr("fleet-agentmanagement", "fleetcontroller", "agentmanagement"),
			},
			Volumes:       []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			NodeSelector:  map[string]string{"kubernetes.io/os": "linux"},
			Tolerations:   []corev1.Toleration{{Key: "cattle.io/os", Operator: corev1.TolerationOpEqual, Value: "linux", Effect: corev1.TaintEffectNoSchedule}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: corev1.DefaultSchedulerName,
			TerminationGracePeriodSeconds: ptr(int64(30)),
			SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(1000))},
		},
	}
	m := o.meta("Deployment", "fleet-controller", ns, "2026-01-12T09:09:20Z", map[string]string{"app.kubernetes.io/managed-by": "Helm"},
		map[string]string{"deployment.kubernetes.io/revision": "7", "meta.helm.sh/release-name": "fleet", "meta.helm.sh/release-namespace": ns})
	m.Generation = 7
	hash := rsHash("fleet-controller7")
	dep := &appsv1.Deployment{TypeMeta: tm("apps/v1", "Deployment"), ObjectMeta: m,
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "fleet-controller"}}, Template: tpl,
			Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr(intstr.FromString("25%")), MaxSurge: ptr(intstr.FromString("25%"))}},
			RevisionHistoryLimit: ptr(int32(10)), ProgressDeadlineSeconds: ptr(int32(600))},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 7, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, Conditions: []appsv1.DeploymentCondition{
			depCond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.", "2026-11-15T03:22:10Z", "2026-11-15T03:22:10Z"),
			depCond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", "ReplicaSet \"fleet-controller-"+hash+"\" has successfully progressed.", "2026-11-28T07:02:14Z", "2026-01-12T09:09:20Z"),
		}}}
	o.single(filepath.Join(ns, "deployment-fleet-controller.yaml"), dep)
	rs := o.replicaSet(dep, rsSpec{hash: hash, revision: "7", tpl: tpl, created: "2026-11-28T07:01:46Z", replicas: 1, ready: 1})
	podName := rs.Name + "-" + podSfx("fleet-controller7")
	o.pod(ctrlRef(rs, "apps/v1", "ReplicaSet"), rs.Spec.Template, ns, podState{
		name: podName, created: "2026-11-28T07:01:46Z", node: "rancher-mgmt-1", hostIP: "10.10.1.11", podIP: "10.42.0.143",
		phase: corev1.PodRunning, started: "2026-11-28T07:01:58Z", ready: true, schedSince: "2026-11-28T07:01:46Z", readySince: "2026-11-28T07:02:05Z",
	})

	// gitjob controller
	gtpl := *tpl.DeepCopy()
	gtpl.Labels = map[string]string{"app": "gitjob"}
	gtpl.Spec.ServiceAccountName, gtpl.Spec.DeprecatedServiceAccount = "gitjob", "gitjob"
	gtpl.Spec.Containers = []corev1.Container{ctr("gitjob", "fleetcontroller", "gitjob", "--gitjob-image", img)}
	gm := o.meta("Deployment", "gitjob", ns, "2026-01-12T09:09:20Z", map[string]string{"app.kubernetes.io/managed-by": "Helm"},
		map[string]string{"deployment.kubernetes.io/revision": "7", "meta.helm.sh/release-name": "fleet", "meta.helm.sh/release-namespace": ns})
	gm.Generation = 7
	ghash := rsHash("gitjob7")
	gdep := &appsv1.Deployment{TypeMeta: tm("apps/v1", "Deployment"), ObjectMeta: gm,
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "gitjob"}}, Template: gtpl,
			Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr(intstr.FromString("25%")), MaxSurge: ptr(intstr.FromString("25%"))}},
			RevisionHistoryLimit: ptr(int32(10)), ProgressDeadlineSeconds: ptr(int32(600))},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 7, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, Conditions: []appsv1.DeploymentCondition{
			depCond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.", "2026-11-15T03:22:12Z", "2026-11-15T03:22:12Z"),
			depCond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", "ReplicaSet \"gitjob-"+ghash+"\" has successfully progressed.", "2026-11-28T07:02:09Z", "2026-01-12T09:09:20Z"),
		}}}
	o.add("deployments", gdep)
	grs := o.replicaSet(gdep, rsSpec{hash: ghash, revision: "7", tpl: gtpl, created: "2026-11-28T07:01:46Z", replicas: 1, ready: 1})
	o.pod(ctrlRef(grs, "apps/v1", "ReplicaSet"), grs.Spec.Template, ns, podState{
		name: grs.Name + "-" + podSfx("gitjob7"), created: "2026-11-28T07:01:46Z", node: "rancher-mgmt-3", hostIP: "10.10.1.13", podIP: "10.42.2.64",
		phase: corev1.PodRunning, started: "2026-11-28T07:01:55Z", ready: true, schedSince: "2026-11-28T07:01:46Z", readySince: "2026-11-28T07:02:01Z",
	})

	// controller config (internal/config: ConfigMap fleet-controller, key "config")
	cfg := `{"systemDefaultRegistry":"","agentImage":"rancher/fleet-agent:` + controllerVer + `","agentImagePullPolicy":"IfNotPresent","apiServerURL":"` + rancherURL + `","apiServerCA":"","agentCheckinInterval":"15m","agentTLSMode":"system-store","garbageCollectionInterval":"15m","ignoreClusterRegistrationLabels":false,"bootstrap":{"paths":"","repo":"","secret":"","branch":"master","namespace":"fleet-local","agentNamespace":"cattle-fleet-local-system"},"webhookReceiverURL":"","githubURLPrefix":""}`
	cm := o.configMap("fleet-controller", ns, "2026-01-12T09:09:20Z", map[string]string{"app.kubernetes.io/managed-by": "Helm"}, map[string]string{"config": cfg})
	cm.Annotations = map[string]string{"meta.helm.sh/release-name": "fleet", "meta.helm.sh/release-namespace": ns}
	o.single(filepath.Join(ns, "configmap-fleet-controller.yaml"), cm)

	// logs: the agentmanagement container re-rendered every agent bundle after the upgrade
	var am logw
	t := mustTime("2026-11-28T07:02:39Z")
	am.logrus(t, "info", "Starting fleet agent management controller")
	for _, c := range w.clusters {
		t = t.Add(173 * time.Millisecond)
		am.logrus(t, "info", "Update agent bundle for cluster "+c.ns+"/"+c.name)
	}
	o.log(ns, podName, "fleet-agentmanagement", false, am.String())
	var fc logw
	t = mustTime("2026-11-28T07:02:00Z")
	fc.klog(t, 'I', "leaderelection.go:257", "attempting to acquire leader lease cattle-fleet-system/fleet-controller-leader-election-shard...")
	t = t.Add(4 * time.Second)
	fc.klog(t, 'I', "leaderelection.go:271", "successfully acquired lease cattle-fleet-system/fleet-controller-leader-election-shard")
	for _, ctl := range []string{"bundle", "bundledeployment", "cluster", "clustergroup", "content", "schedule", "imagescan"} {
		fc.zap(t, "INFO", "", "Starting Controller", q("controller", ctl))
	}
	fc.zap(t.Add(time.Second), "INFO", "", "Starting workers", q("controller", "bundledeployment"), qn("worker count", 50))
	fc.zap(t.Add(time.Second), "INFO", "", "Starting workers", q("controller", "bundle"), qn("worker count", 50))
	fc.zap(t.Add(time.Second), "INFO", "", "Starting workers", q("controller", "cluster"), qn("worker count", 50))
	o.log(ns, podName, "fleet-controller", false, fc.String())
}
