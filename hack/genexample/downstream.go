package main

import (
	"fmt"
	rbacv1 "k8s.io/api/rbac/v1"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"helm.sh/helm/v3/pkg/release"
)

const (
	rke2Kubelet = "v1.31.12+rke2r1"
	k3sKubelet  = "v1.31.12+k3s1"
	runtimeVer  = "containerd://1.7.27-k3s1"
	slesImage   = "SUSE Linux Enterprise Server 15 SP6"
	slesKernel  = "6.4.0-150600.23.53-default"
)

func depCond(t appsv1.DeploymentConditionType, st corev1.ConditionStatus, reason, msg, upd, trans string) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: st, Reason: reason, Message: msg, LastUpdateTime: mt(upd), LastTransitionTime: mt(trans)}
}

type depSpec struct {
	created    string
	generation int64
	revision   string
	version    string
	status     appsv1.DeploymentStatus
	release    string // Helm release that owns it
	mf         []metav1.ManagedFieldsEntry
}

// agentDeployment is the fleet-agent Deployment as it exists on a downstream
// cluster after Fleet's Helm deployer applied the agent bundle.
func (o *out) agentDeployment(c *fcl, d depSpec) *appsv1.Deployment {
	a := c.agentOpts(d.version)
	m := o.meta("Deployment", "fleet-agent", c.agentNS, d.created, nil, map[string]string{"deployment.kubernetes.io/revision": d.revision})
	setID := agentSetID
	if c.specAgentNS != "" {
		setID = safeConcatName(agentSetID, c.specAgentNS)
	}
	helmOwnedMeta(&m, d.release, c.agentNS, setID)
	m.Generation = d.generation
	m.ManagedFields = d.mf
	strategy := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr(intstr.FromString("25%")), MaxSurge: ptr(intstr.FromString("25%")),
	}}
	if a.hostNetwork {
		strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	dep := &appsv1.Deployment{
		TypeMeta:   tm("apps/v1", "Deployment"),
		ObjectMeta: m,
		Spec: appsv1.DeploymentSpec{
			Replicas:                ptr(int32(1)),
			Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"app": "fleet-agent"}},
			Template:                agentPodTemplate(a),
			Strategy:                strategy,
			RevisionHistoryLimit:    ptr(int32(10)),
			ProgressDeadlineSeconds: ptr(int32(600)),
		},
		Status: d.status,
	}
	dep.Status.ObservedGeneration = d.generation
	o.add("deployments", dep)
	return dep
}

func rsHash(seed string) string { return randFrom("rs:"+seed, k8sAlphabet, 10) }
func podSfx(seed string) string { return randFrom("pod:"+seed, k8sAlphabet, 5) }
func ctrlRef(obj metav1.Object, apiVersion, kind string) metav1.OwnerReference {
	return ownerRef(apiVersion, kind, obj.GetName(), string(obj.GetUID()))
}

// baseDownstream writes the objects every downstream cluster has.
func (w *world) baseDownstream(c *fcl, o *out, nodes []nodeSpec, clusterCreated string) {
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		o.namespace(ns, clusterCreated, nil, nil)
	}
	o.namespace("cattle-system", rfc(mustTime(clusterCreated).Add(4*time.Minute)), nil, nil)
	o.namespace("cattle-fleet-system", rfc(mustTime(clusterCreated).Add(6*time.Minute)), nil, nil)
	o.namespace("monitoring", "2026-08-20T12:01:02Z", map[string]string{"name": "monitoring"}, nil)
	o.namespace("ingress-config", "2026-08-20T12:01:03Z", map[string]string{"name": "ingress-config"}, nil)
	for _, n := range nodes {
		o.node(n)
	}
	// the agent's config (internal/config: AgentConfigName "fleet-agent" ConfigMap, key "config")
	cfg := fmt.Sprintf(`{"clientID":%q,"labels":{"env":%q,"management.cattle.io/cluster-display-name":%q,"management.cattle.io/cluster-name":%q},"agentTLSMode":"system-store","garbageCollectionInterval":"15m0s"}`,
		c.clientID(), c.extraLabels["env"], c.display, c.mgmt)
	cm := o.configMap("fleet-agent", c.agentNS, rfc(mustTime(c.importedAt).Add(time.Second)),
		map[string]string{"objectset.rio.cattle.io/hash": sha1hex(agentSetID)}, map[string]string{"config": cfg})
	cm.Annotations = map[string]string{"objectset.rio.cattle.io/id": agentSetID}
	o.add("configmaps", cm)
	// the agent's upstream credentials (register.go CredName "fleet-agent"); payload redacted
	sec := o.opaqueSecret("fleet-agent", c.agentNS, rfc(mustTime(c.regAt).Add(9*time.Second)), nil, map[string]string{
		"clusterName":         c.name,
		"clusterNamespace":    c.ns,
		"deploymentNamespace": c.clusterNS,
		"kubeconfig":          "REDACTED",
	})
	o.add("secrets", sec)
	// what the ingress-config bundle deploys
	ing := o.configMap("ingress-defaults", "ingress-config", "2026-08-20T12:01:04Z", map[string]string{"app.kubernetes.io/managed-by": "Helm", "objectset.rio.cattle.io/hash": sha1hex("ingress-config")},
		map[string]string{"proxy-body-size": "16m", "ssl-protocols": "TLSv1.2 TLSv1.3", "use-forwarded-headers": "true"})
	ing.Annotations = map[string]string{"meta.helm.sh/release-name": "ingress-config", "meta.helm.sh/release-namespace": "ingress-config", "objectset.rio.cattle.io/id": "default-ingress-config"}
	o.add("configmaps", ing)
}

func (w *world) downstream(c *fcl) error {
	root := filepath.Join(w.outDir, "clusters", c.dir)
	base := map[string]int{"prod-eu-1": 91230411, "prod-us-1": 57410022, "edge-arm-1": 3318807, "staging-1": 22781964, "dev-1": 1204733, gateDir: 44120876}[c.dir]
	o := newOut(root, c.dir == "prod-us-1", base)
	switch c.dir {
	case "prod-eu-1":
		w.prodEU(c, o)
	case "prod-us-1":
		w.prodUS(c, o)
	case "edge-arm-1":
		w.edge(c, o)
	case "staging-1":
		w.healthy(c, o, true)
	case "dev-1":
		w.healthy(c, o, false)
	case gateDir:
		w.gate(c, o)
	}
	return o.flush()
}

func rke2Node(name, ip, cidr string, roles []string, cpu int, memKi int64, created, ready string) nodeSpec {
	return nodeSpec{name: name, ip: ip, arch: "amd64", osImage: slesImage, kernel: slesKernel, kubelet: rke2Kubelet, runtime: runtimeVer,
		roles: roles, cpu: cpu, memKi: memKi, created: created, readySince: ready, heartbeat: "2026-11-28T09:28:51Z", podCIDR: cidr}
}

var cpRoles = []string{"control-plane", "etcd", "master"}

// agentReleaseSpec is one revision of the agent's Helm release.
func (w *world) agentRelease(c *fcl, o *out, version int, status release.Status, agentVer, first, last, desc, created, modified string) {
	b := agentBundle(c, agentVer)
	objs := agentObjects(c.agentOpts(agentVer))
	setID := agentSetID
	if c.specAgentNS != "" {
		setID = safeConcatName(agentSetID, c.specAgentNS)
	}
	sec := o.helmReleaseSecret(relSpec{
		name: b.name, ns: c.agentNS, version: version, status: status,
		firstDeployed: first, lastDeployed: last, description: desc,
		chart:    fleetBundleChart(b.name, b.contentID, c.agentNS),
		config:   map[string]any{},
		manifest: releaseManifest(objs, setID),
		created:  created, modifiedAt: modified,
	})
	o.add("secrets", sec)
}

// ---------------------------------------------------------------------------
// prod-eu-1: the agent's Helm release is stuck in pending-upgrade

func (w *world) prodEU(c *fcl, o *out) {
	nodes := []nodeSpec{
		rke2Node("prod-eu-1-cp-0", "10.20.1.10", "10.42.0.0/24", cpRoles, 8, 32863700, "2026-03-14T10:12:03Z", "2026-10-21T04:12:44Z"),
		rke2Node("prod-eu-1-worker-0", "10.20.1.21", "10.42.1.0/24", []string{"worker"}, 16, 65791868, "2026-03-14T10:16:40Z", "2026-10-21T04:31:09Z"),
		rke2Node("prod-eu-1-worker-1", "10.20.1.22", "10.42.2.0/24", []string{"worker"}, 16, 65791868, "2026-03-14T10:16:52Z", "2026-11-28T08:40:58Z"),
	}
	w.baseDownstream(c, o, nodes, "2026-03-14T10:11:20Z")

	dep := o.agentDeployment(c, depSpec{
		created: "2026-03-14T10:22:33Z", generation: 5, revision: "3", version: oldAgentVer, release: "fleet-agent-" + c.name,
		status: appsv1.DeploymentStatus{
			Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{
				depCond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", fmt.Sprintf("ReplicaSet \"fleet-agent-%s\" has successfully progressed.", rsHash(c.name+"3")), "2026-10-06T06:36:20Z", "2026-03-14T10:22:33Z"),
				depCond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.", "2026-11-28T07:12:58Z", "2026-11-28T07:12:58Z"),
			},
		},
	})
	o.replicaSet(dep, rsSpec{hash: rsHash(c.name + "2"), revision: "2", tpl: agentPodTemplate(c.agentOpts("v0.14.4")), created: "2026-07-15T08:12:40Z"})
	rs := o.replicaSet(dep, rsSpec{hash: rsHash(c.name + "3"), revision: "3", tpl: agentPodTemplate(c.agentOpts(oldAgentVer)), created: "2026-10-06T06:36:03Z", replicas: 1, ready: 1})
	podName := rs.Name + "-" + podSfx(c.name+"3")
	o.pod(ctrlRef(rs, "apps/v1", "ReplicaSet"), rs.Spec.Template, c.agentNS, podState{
		name: podName, created: "2026-11-28T07:12:42Z", node: "prod-eu-1-worker-0", hostIP: "10.20.1.21", podIP: "10.42.1.37",
		phase: corev1.PodRunning, started: "2026-11-28T07:12:47Z", ready: true, schedSince: "2026-11-28T07:12:42Z", readySince: "2026-11-28T07:12:58Z",
	})

	// Helm history: v3 deployed (0.15.3), v4 pending-upgrade (0.16.0) left by the
	// agent that was evicted at 07:12:41 while it was upgrading itself.
	w.agentRelease(c, o, 3, release.StatusDeployed, oldAgentVer, "2026-03-14T10:22:31Z", "2026-10-06T06:36:02Z", "Upgrade complete", "2026-10-06T06:36:02Z", "2026-10-06T06:36:03Z")
	w.agentRelease(c, o, 4, release.StatusPendingUpgrade, controllerVer, "2026-03-14T10:22:31Z", "2026-11-28T07:12:40Z", "Preparing upgrade", "2026-11-28T07:12:40Z", "")

	// node events of the OS patch on worker-1 (reboot, uncordon) within the event TTL
	nodeRef := objRef("Node", "", "", "prod-eu-1-worker-1", "prod-eu-1-worker-1", "", "")
	for i, e := range []struct{ reason, msg, at string }{
		{"Starting", "Starting kubelet.", "2026-11-28T08:40:41Z"},
		{"NodeHasSufficientMemory", "Node prod-eu-1-worker-1 status is now: NodeHasSufficientMemory", "2026-11-28T08:40:41Z"},
		{"NodeHasNoDiskPressure", "Node prod-eu-1-worker-1 status is now: NodeHasNoDiskPressure", "2026-11-28T08:40:41Z"},
		{"NodeHasSufficientPID", "Node prod-eu-1-worker-1 status is now: NodeHasSufficientPID", "2026-11-28T08:40:41Z"},
		{"NodeReady", "Node prod-eu-1-worker-1 status is now: NodeReady", "2026-11-28T08:40:58Z"},
		{"NodeSchedulable", "Node prod-eu-1-worker-1 status is now: NodeSchedulable", "2026-11-28T08:41:07Z"},
	} {
		_ = i
		ev := o.event(evSpec{ns: "default", obj: nodeRef, typ: "Normal", reason: e.reason, msg: e.msg, component: "kubelet", host: "prod-eu-1-worker-1", first: e.at, last: e.at, count: 1})
		ev.InvolvedObject.UID = typesUID("prod-eu-1-worker-1")
		o.add("events", ev)
	}

	// agent log: v0.15.3 restarted on worker-0, retrying the upgrade and failing
	var l logw
	t := agentStartup(&l, mustTime("2026-11-28T07:12:47Z").Add(312*time.Millisecond), c.agentNS, podName, c.name, c.clusterNS)
	bd := c.agentBundleName()
	// controller-runtime's per-item exponential backoff: 5ms * 2^n, capped at 1000s
	t = mustTime("2026-11-28T07:13:02Z")
	delay := 5 * time.Millisecond
	for i := 0; t.Before(collectedAt); i++ {
		f := append(bdFields(bd, c.clusterNS, reconcileID(fmt.Sprint("eu", i))),
			q("error", "failed deploying bundle: another operation (install/upgrade/rollback) is in progress"))
		l.zap(t, "ERROR", "", "Reconciler error", f...)
		l.stack(reconcileStack...)
		t = t.Add(delay + 180*time.Millisecond)
		delay *= 2
		if delay > 1000*time.Second {
			delay = 1000 * time.Second
		}
	}
	o.log(c.agentNS, podName, "fleet-agent", false, l.String())
	o.agentRBAC(c, oldAgentVer, "2026-03-14T10:22:32Z")
}

// ---------------------------------------------------------------------------
// prod-us-1: the new agent crash-loops (fleet-dump style files)

// crashRuns simulates the kubelet restart back-off (10s doubling to 5m) for a
// container that runs runFor and exits.
func crashRuns(start time.Time, runFor time.Duration, until time.Time) (runs [][2]time.Time, backoffs []time.Duration) {
	t := start
	b := 10 * time.Second
	for {
		f := t.Add(runFor)
		if f.After(until) {
			return
		}
		runs = append(runs, [2]time.Time{t, f})
		next := f.Add(b)
		if next.After(until) {
			backoffs = append(backoffs, until.Sub(f))
			return
		}
		backoffs = append(backoffs, b)
		t = next
		b *= 2
		if b > 5*time.Minute {
			b = 5 * time.Minute
		}
	}
}

func (w *world) prodUS(c *fcl, o *out) {
	ubuntu := func(n nodeSpec) nodeSpec {
		n.osImage, n.kernel = "Ubuntu 22.04.5 LTS", "5.15.0-126-generic"
		return n
	}
	nodes := []nodeSpec{
		ubuntu(rke2Node("prod-us-1-cp-0", "10.30.1.10", "10.42.0.0/24", cpRoles, 8, 32863700, "2026-04-08T12:58:31Z", "2026-09-30T02:10:05Z")),
		ubuntu(rke2Node("prod-us-1-worker-0", "10.30.1.21", "10.42.1.0/24", []string{"worker"}, 16, 65791868, "2026-04-08T13:01:12Z", "2026-09-30T02:18:40Z")),
		ubuntu(rke2Node("prod-us-1-worker-1", "10.30.1.22", "10.42.2.0/24", []string{"worker"}, 16, 65791868, "2026-04-08T13:01:19Z", "2026-09-30T02:24:51Z")),
	}
	w.baseDownstream(c, o, nodes, "2026-04-08T12:57:50Z")

	newHash := rsHash(c.name + "4")
	dep := o.agentDeployment(c, depSpec{
		created: "2026-04-08T13:07:02Z", generation: 6, revision: "4", version: controllerVer, release: "fleet-agent-" + c.name,
		status: appsv1.DeploymentStatus{
			Replicas: 1, UpdatedReplicas: 1, UnavailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{
				depCond(appsv1.DeploymentAvailable, corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability.", "2026-11-28T07:20:11Z", "2026-11-28T07:20:11Z"),
				depCond(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", fmt.Sprintf("ReplicaSet \"fleet-agent-%s\" has timed out progressing.", newHash), "2026-11-28T07:30:20Z", "2026-11-28T07:30:20Z"),
			},
		},
	})
	o.replicaSet(dep, rsSpec{hash: rsHash(c.name + "3"), revision: "3", tpl: agentPodTemplate(c.agentOpts(oldAgentVer)), created: "2026-10-06T06:38:20Z"})
	rs := o.replicaSet(dep, rsSpec{hash: newHash, revision: "4", tpl: agentPodTemplate(c.agentOpts(controllerVer)), created: "2026-11-28T07:20:11Z", replicas: 1})
	podName := rs.Name + "-" + podSfx(c.name+"4")

	runs, backoffs := crashRuns(mustTime("2026-11-28T07:20:22Z"), 199*time.Second, collectedAt)
	last := runs[len(runs)-1]
	restarts := int32(len(runs) - 1)
	podUID := uid(o.id + "|Pod|" + c.agentNS + "|" + podName)
	podRef := fmt.Sprintf("%s_%s(%s)", podName, c.agentNS, podUID)
	p := o.pod(ctrlRef(rs, "apps/v1", "ReplicaSet"), rs.Spec.Template, c.agentNS, podState{
		name: podName, created: "2026-11-28T07:20:19Z", node: "prod-us-1-worker-0", hostIP: "10.30.1.21", podIP: "10.30.1.21",
		phase: corev1.PodRunning, restarts: restarts, ready: false, schedSince: "2026-11-28T07:20:19Z", readySince: "2026-11-28T07:20:19Z",
		waiting:  &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container=fleet-agent pod=" + podRef},
		lastTerm: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: mtt(last[0]), FinishedAt: mtt(last[1])},
	})
	_ = p

	// kubelet events, aggregated by the recorder (count / firstTimestamp / lastTimestamp)
	ref := objRef("Pod", "v1", c.agentNS, podName, string(podUID), "spec.containers{fleet-agent}", "57410388")
	backOffCount := int32(0)
	for _, b := range backoffs {
		backOffCount += int32(b/(13*time.Second)) + 1
	}
	lastBackOff := last[1].Add(backoffs[len(backoffs)-1] - 7*time.Second)
	evs := []evSpec{
		{reason: "Pulled", typ: "Normal", msg: "Container image \"rancher/fleet-agent:" + controllerVer + "\" already present on machine", first: rfc(runs[1][0]), last: rfc(last[0]), count: restarts},
		{reason: "Created", typ: "Normal", msg: "Created container: fleet-agent", first: rfc(runs[0][0]), last: rfc(last[0]), count: restarts + 1},
		{reason: "Started", typ: "Normal", msg: "Started container fleet-agent", first: rfc(runs[0][0]), last: rfc(last[0]), count: restarts + 1},
		{reason: "BackOff", typ: "Warning", msg: "Back-off restarting failed container fleet-agent in pod " + podRef, first: rfc(runs[0][1].Add(time.Second)), last: rfc(lastBackOff), count: backOffCount},
	}
	for _, e := range evs {
		e.ns, e.obj, e.component, e.host = c.agentNS, ref, "kubelet", "prod-us-1-worker-0"
		o.add("events", o.event(e))
	}

	// Helm: the old agent upgraded the release (v3 deployed); the Recreate rollout
	// killed it before it could report the BundleDeployment status upstream.
	w.agentRelease(c, o, 2, release.StatusSuperseded, oldAgentVer, "2026-04-08T13:07:00Z", "2026-10-06T06:38:19Z", "Upgrade complete", "2026-10-06T06:38:19Z", "2026-11-28T07:20:11Z")
	w.agentRelease(c, o, 3, release.StatusDeployed, controllerVer, "2026-04-08T13:07:00Z", "2026-11-28T07:20:09Z", "Upgrade complete", "2026-11-28T07:20:09Z", "2026-11-28T07:20:11Z")

	// CRDs present on the cluster: rke2's, the system-upgrade-controller's, snapshots.
	// No fleet.cattle.io CRD among them.
	crds := []struct{ plural, group, version, kind, scope, created string }{
		{"addons", "k3s.cattle.io", "v1", "Addon", "Namespaced", "2026-04-08T12:57:48Z"},
		{"etcdsnapshotfiles", "k3s.cattle.io", "v1", "ETCDSnapshotFile", "Cluster", "2026-04-08T12:57:48Z"},
		{"helmchartconfigs", "helm.cattle.io", "v1", "HelmChartConfig", "Namespaced", "2026-04-08T12:57:48Z"},
		{"helmcharts", "helm.cattle.io", "v1", "HelmChart", "Namespaced", "2026-04-08T12:57:48Z"},
		{"plans", "upgrade.cattle.io", "v1", "Plan", "Namespaced", "2026-04-08T13:03:27Z"},
		{"volumesnapshotclasses", "snapshot.storage.k8s.io", "v1", "VolumeSnapshotClass", "Cluster", "2026-04-08T12:58:40Z"},
		{"volumesnapshotcontents", "snapshot.storage.k8s.io", "v1", "VolumeSnapshotContent", "Cluster", "2026-04-08T12:58:40Z"},
		{"volumesnapshots", "snapshot.storage.k8s.io", "v1", "VolumeSnapshot", "Namespaced", "2026-04-08T12:58:40Z"},
		{"ippools", "crd.projectcalico.org", "v1", "IPPool", "Cluster", "2026-04-08T12:58:22Z"},
		{"felixconfigurations", "crd.projectcalico.org", "v1", "FelixConfiguration", "Cluster", "2026-04-08T12:58:22Z"},
	}
	for _, d := range crds {
		o.add("customresourcedefinitions", o.crd(d.plural, d.group, d.version, d.kind, d.scope, d.created, nil, nil))
	}

	// the last crashed run's log: wait for the lease, start the manager, wait 2m
	// (controller-runtime's default CacheSyncTimeout) for the informer, give up, exit 1
	var l logw
	end := last[1].Add(-800 * time.Millisecond)
	syncStart := end.Add(-2 * time.Minute)
	t := last[0].Add(418 * time.Millisecond)
	l.klog(t, 'I', "leaderelection.go:257", "attempting to acquire leader lease "+c.agentNS+"/fleet-agent...")
	t = syncStart.Add(-900 * time.Millisecond) // the crashed run's lease had to expire first
	l.klog(t, 'I', "leaderelection.go:271", "successfully acquired lease "+c.agentNS+"/fleet-agent")
	l.zap(t, "INFO", "setup", "renewed leader", q("identity", podName))
	t = t.Add(900 * time.Millisecond)
	l.zap(t, "INFO", "setup", "listening for changes on upstream cluster", q("cluster", c.name), q("namespace", c.clusterNS))
	l.zap(t, "INFO", "setup", "starting manager")
	l.zap(t, "INFO", "controller-runtime.metrics", "Starting metrics server")
	l.zap(t, "INFO", "", "starting server", q("name", "health probe"), q("addr", "[::]:8081"))
	l.zap(t, "INFO", "controller-runtime.metrics", "Serving metrics server", q("bindAddress", ":8080"), qb("secure", false))
	l.zap(t, "INFO", "", "Starting EventSource", q("controller", "bundledeployment"), q("controllerGroup", "fleet.cattle.io"), q("controllerKind", "BundleDeployment"), q("source", "kind source: *v1alpha1.BundleDeployment"))
	l.zap(t, "INFO", "", "Starting Controller", q("controller", "bundledeployment"), q("controllerGroup", "fleet.cattle.io"), q("controllerKind", "BundleDeployment"))
	reflector := "pkg/mod/k8s.io/client-go@v0.34.2/tools/cache/reflector.go:290"
	listErr := "failed to list *v1alpha1.BundleDeployment: the server could not find the requested resource (get bundledeployments.fleet.cattle.io)"
	step := 800 * time.Millisecond
	for t2 := t.Add(350 * time.Millisecond); t2.Before(syncStart.Add(2 * time.Minute)); t2 = t2.Add(step) {
		l.klog(t2, 'W', "reflector.go:569", reflector+": "+listErr)
		l.klog(t2.Add(90*time.Microsecond), 'E', "reflector.go:166", `"Unhandled Error" err="`+reflector+`: Failed to watch *v1alpha1.BundleDeployment: `+listErr+`" logger="UnhandledError"`)
		step *= 2
		if step > 30*time.Second {
			step = 30 * time.Second
		}
	}
	l.zap(syncStart.Add(10*time.Second), "ERROR", "controller-runtime.source.EventHandler", "if kind is a CRD, it should be installed before calling Start",
		q("kind", "BundleDeployment.fleet.cattle.io"), q("error", `no matches for kind "BundleDeployment" in version "fleet.cattle.io/v1alpha1"`))
	l.stack("sigs.k8s.io/controller-runtime/pkg/internal/source.(*Kind[...]).Start.func1.1",
		"\t/go/pkg/mod/sigs.k8s.io/controller-runtime@v0.21.0/pkg/internal/source/kind.go:71")
	syncErr := "failed to wait for bundledeployment caches to sync kind source: *v1alpha1.BundleDeployment: timed out waiting for cache to be synced for Kind *v1alpha1.BundleDeployment"
	l.zap(end, "ERROR", "", "Could not wait for Cache to sync", q("controller", "bundledeployment"), q("controllerGroup", "fleet.cattle.io"), q("controllerKind", "BundleDeployment"), q("error", syncErr))
	l.stack(reconcileStack[4:]...)
	l.zap(end, "INFO", "", "Stopping and waiting for non leader election runnables")
	l.zap(end, "INFO", "", "Stopping and waiting for leader election runnables")
	l.zap(end, "INFO", "", "Stopping and waiting for caches")
	l.zap(end, "INFO", "", "Stopping and waiting for webhooks")
	l.zap(end, "INFO", "", "Stopping and waiting for HTTP servers")
	l.zap(end, "INFO", "controller-runtime.metrics", "Shutting down metrics server with timeout of 1 minute")
	l.zap(end, "INFO", "", "shutting down server", q("name", "health probe"), q("addr", "[::]:8081"))
	l.zap(end, "INFO", "", "Wait completed, proceeding to shutdown the manager")
	l.zap(end, "ERROR", "setup", "problem running manager", q("error", syncErr))
	l.zap(end, "ERROR", "setup", "failed to start agent", q("error", syncErr))
	l.klog(last[1].Add(-300*time.Millisecond), 'E', "leaderelection.go:436", "Failed to update lock optimistically: context canceled, falling back to slow path")
	l.klog(last[1].Add(-299*time.Millisecond), 'I', "leaderelection.go:297", "failed to renew lease "+c.agentNS+"/fleet-agent: context canceled")
	l.zap(last[1].Add(-280*time.Millisecond), "INFO", "setup", "stopped leading")
	o.log(c.agentNS, podName, "fleet-agent", true, l.String())
}

// ---------------------------------------------------------------------------
// edge-arm-1: the new agent pod cannot be scheduled (node taints)

func (w *world) edge(c *fcl, o *out) {
	k3s := func(name, ip, cidr string, roles []string, created, ready string) nodeSpec {
		return nodeSpec{name: name, ip: ip, arch: "arm64", osImage: "Ubuntu 24.04.1 LTS", kernel: "6.8.0-1015-raspi", kubelet: k3sKubelet, runtime: runtimeVer,
			k3s: true, roles: roles, cpu: 4, memKi: 8012352, created: created, readySince: ready, heartbeat: "2026-11-28T09:27:33Z", podCIDR: cidr,
			taints: []corev1.Taint{{Key: "dedicated", Value: "edge", Effect: corev1.TaintEffectNoSchedule}}}
	}
	nodes := []nodeSpec{
		k3s("edge-arm-1-node-0", "192.168.50.11", "10.42.0.0/24", []string{"control-plane", "master"}, "2026-06-19T08:35:10Z", "2026-11-09T13:58:41Z"),
		k3s("edge-arm-1-node-1", "192.168.50.12", "10.42.1.0/24", nil, "2026-06-19T08:37:45Z", "2026-11-09T14:00:55Z"),
	}
	w.baseDownstream(c, o, nodes, "2026-06-19T08:35:02Z")
	// the taint was added with kubectl on 2026-11-10, after the old agent pod was scheduled
	for _, it := range o.lists[listKey{"", "nodes"}] {
		n := it.(*corev1.Node)
		n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-taint", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: mtp("2026-11-10T09:41:27Z"), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:taints":{}}}`)}}}
	}

	newHash := rsHash(c.name + "4")
	mf := []metav1.ManagedFieldsEntry{
		{Manager: "fleetagent", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: mtp("2026-11-28T07:14:01Z"), FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:meta.helm.sh/release-name":{},"f:meta.helm.sh/release-namespace":{},"f:objectset.rio.cattle.io/id":{}},"f:labels":{".":{},"f:app.kubernetes.io/managed-by":{},"f:objectset.rio.cattle.io/hash":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:affinity":{".":{},"f:nodeAffinity":{".":{},"f:preferredDuringSchedulingIgnoredDuringExecution":{}}},"f:containers":{"k:{\"name\":\"fleet-agent\"}":{".":{},"f:command":{},"f:env":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:securityContext":{},"f:volumeMounts":{}}},"f:nodeSelector":{},"f:securityContext":{},"f:serviceAccountName":{},"f:tolerations":{},"f:volumes":{}}}}}`)}},
		{Manager: "k3s", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: mtp("2026-11-28T07:24:02Z"), FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}},"f:status":{"f:availableReplicas":{},"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Progressing\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{},"f:unavailableReplicas":{},"f:updatedReplicas":{}}}`)}},
	}
	dep := o.agentDeployment(c, depSpec{
		created: "2026-06-19T08:43:10Z", generation: 5, revision: "4", version: controllerVer, release: "fleet-agent-" + c.name, mf: mf,
		status: appsv1.DeploymentStatus{
			Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UnavailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{
				depCond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.", "2026-11-09T14:02:03Z", "2026-11-09T14:02:03Z"),
				depCond(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", fmt.Sprintf("ReplicaSet \"fleet-agent-%s\" has timed out progressing.", newHash), "2026-11-28T07:24:02Z", "2026-11-28T07:24:02Z"),
			},
		},
	})
	w.edgeDeployUID = string(dep.UID)
	w.edgeNewRS = "fleet-agent-" + newHash
	oldRS := o.replicaSet(dep, rsSpec{hash: rsHash(c.name + "3"), revision: "3", tpl: agentPodTemplate(c.agentOpts(oldAgentVer)), created: "2026-10-06T06:41:28Z", replicas: 1, ready: 1})
	newRS := o.replicaSet(dep, rsSpec{hash: newHash, revision: "4", tpl: agentPodTemplate(c.agentOpts(controllerVer)), created: "2026-11-28T07:14:01Z", replicas: 1})
	oldPod := oldRS.Name + "-" + podSfx(c.name+"3")
	o.pod(ctrlRef(oldRS, "apps/v1", "ReplicaSet"), oldRS.Spec.Template, c.agentNS, podState{
		name: oldPod, created: "2026-11-09T14:01:37Z", node: "edge-arm-1-node-1", hostIP: "192.168.50.12", podIP: "10.42.1.9",
		phase: corev1.PodRunning, started: "2026-11-09T14:01:51Z", ready: true, schedSince: "2026-11-09T14:01:37Z", readySince: "2026-11-09T14:02:03Z",
	})
	newPod := newRS.Name + "-" + podSfx(c.name+"4")
	schedMsg := "0/2 nodes are available: 2 node(s) had untolerated taint {dedicated: edge}. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
	np := o.pod(ctrlRef(newRS, "apps/v1", "ReplicaSet"), newRS.Spec.Template, c.agentNS, podState{
		name: newPod, created: "2026-11-28T07:14:02Z", phase: corev1.PodPending,
		unschedulable: schedMsg, schedSince: "2026-11-28T07:14:02Z",
	})
	np.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "k3s", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: mtp("2026-11-28T07:14:02Z"), FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"` + string(newRS.UID) + `\"}":{}}},"f:spec":{"f:affinity":{},"f:containers":{},"f:nodeSelector":{},"f:tolerations":{},"f:volumes":{}}}`)}},
		{Manager: "k3s", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: mtp("2026-11-28T07:14:02Z"), FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"PodScheduled\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}}}}`)}},
	}

	// The scheduler records through events.k8s.io/v1: eventTime + series, the
	// deprecated firstTimestamp/lastTimestamp/count stay empty in the core/v1 view.
	ev := o.event(evSpec{ns: c.agentNS, obj: objRef("Pod", "v1", c.agentNS, newPod, string(np.UID), "", np.ResourceVersion),
		typ: "Warning", reason: "FailedScheduling", msg: schedMsg, component: "default-scheduler", host: "edge-arm-1-node-0",
		first: "2026-11-28T07:14:02Z", last: "2026-11-28T09:24:07.381220Z", count: 27, eventsV1: true, action: "Scheduling"})
	o.add("events", ev)

	w.agentRelease(c, o, 3, release.StatusSuperseded, oldAgentVer, "2026-06-19T08:43:08Z", "2026-10-06T06:41:27Z", "Upgrade complete", "2026-10-06T06:41:27Z", "2026-11-28T07:14:01Z")
	w.agentRelease(c, o, 4, release.StatusDeployed, controllerVer, "2026-06-19T08:43:08Z", "2026-11-28T07:14:00Z", "Upgrade complete", "2026-11-28T07:14:00Z", "2026-11-28T07:14:01Z")

	// old agent's log: started 11-09, upgraded its own release today, still running
	var l logw
	agentStartup(&l, mustTime("2026-11-09T14:01:51Z").Add(204*time.Millisecond), c.agentNS, oldPod, c.name, c.clusterNS)
	old := agentBundle(c, oldAgentVer)
	cur := agentBundle(c, controllerVer)
	opts := optionsHash(optsFor(cur))
	selfUpgradeLines(&l, mustTime("2026-11-28T07:13:59Z"), cur.name, c.clusterNS, c.agentNS+"/"+cur.name+":4", cur.contentID+":"+opts, old.contentID+":"+opts)
	o.log(c.agentNS, oldPod, "fleet-agent", false, l.String())
}

// ---------------------------------------------------------------------------
// staging-1 and dev-1: healthy noise

func (w *world) healthy(c *fcl, o *out, staging bool) {
	var nodes []nodeSpec
	var dep depSpec
	var oldRev, newRev int
	var upgradedAt, nodeName, hostIP, podIP, clusterCreated string
	if staging {
		nodes = []nodeSpec{
			rke2Node("staging-1-node-0", "10.40.1.10", "10.42.0.0/24", append([]string{"worker"}, cpRoles...), 8, 32863700, "2026-02-20T15:25:10Z", "2026-11-02T03:05:12Z"),
			rke2Node("staging-1-node-1", "10.40.1.11", "10.42.1.0/24", []string{"worker"}, 8, 32863700, "2026-02-20T15:28:33Z", "2026-11-22T02:13:58Z"),
		}
		clusterCreated = "2026-02-20T15:24:31Z"
		dep = depSpec{created: "2026-02-20T15:35:01Z", generation: 9, revision: "6"}
		oldRev, newRev, upgradedAt = 5, 6, "2026-11-28T07:06:11Z"
		nodeName, hostIP, podIP = "staging-1-node-1", "10.40.1.11", "10.42.1.54"
	} else {
		nodes = []nodeSpec{{name: "dev-1-node-0", ip: "10.50.1.10", arch: "amd64", osImage: "Ubuntu 24.04.1 LTS", kernel: "6.8.0-49-generic",
			kubelet: k3sKubelet, runtime: runtimeVer, k3s: true, roles: []string{"control-plane", "master"}, cpu: 4, memKi: 16375304,
			created: "2026-05-27T10:58:02Z", readySince: "2026-11-23T22:47:19Z", heartbeat: "2026-11-28T09:29:12Z", podCIDR: "10.42.0.0/24"}}
		clusterCreated = "2026-05-27T10:57:55Z"
		dep = depSpec{created: "2026-05-27T11:04:22Z", generation: 6, revision: "3"}
		oldRev, newRev, upgradedAt = 2, 3, "2026-11-28T07:07:39Z"
		nodeName, hostIP, podIP = "dev-1-node-0", "10.50.1.10", "10.42.0.31"
	}
	w.baseDownstream(c, o, nodes, clusterCreated)

	up := mustTime(upgradedAt)
	newHash := rsHash(c.name + fmt.Sprint(newRev))
	dep.version, dep.release = controllerVer, "fleet-agent-"+c.name
	dep.status = appsv1.DeploymentStatus{
		Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			depCond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.", rfc(mustTime(c.importedAt).Add(70*time.Second)), rfc(mustTime(c.importedAt).Add(70*time.Second))),
			depCond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", fmt.Sprintf("ReplicaSet \"fleet-agent-%s\" has successfully progressed.", newHash), rfc(up.Add(20*time.Second)), dep.created),
		},
	}
	d := o.agentDeployment(c, dep)
	o.replicaSet(d, rsSpec{hash: rsHash(c.name + fmt.Sprint(oldRev)), revision: fmt.Sprint(oldRev), tpl: agentPodTemplate(c.agentOpts(oldAgentVer)), created: "2026-10-06T06:35:16Z"})
	rs := o.replicaSet(d, rsSpec{hash: newHash, revision: fmt.Sprint(newRev), tpl: agentPodTemplate(c.agentOpts(controllerVer)), created: rfc(up.Add(time.Second)), replicas: 1, ready: 1})
	podName := rs.Name + "-" + podSfx(c.name+fmt.Sprint(newRev))
	o.pod(ctrlRef(rs, "apps/v1", "ReplicaSet"), rs.Spec.Template, c.agentNS, podState{
		name: podName, created: rfc(up.Add(time.Second)), node: nodeName, hostIP: hostIP, podIP: podIP,
		phase: corev1.PodRunning, started: rfc(up.Add(5 * time.Second)), ready: true, schedSince: rfc(up.Add(time.Second)), readySince: rfc(up.Add(20 * time.Second)),
	})
	first := mustTime(c.importedAt).Add(-time.Second)
	w.agentRelease(c, o, oldRev, release.StatusSuperseded, oldAgentVer, rfc(first), "2026-10-06T06:35:15Z", "Upgrade complete", "2026-10-06T06:35:15Z", rfc(up.Add(time.Second)))
	w.agentRelease(c, o, newRev, release.StatusDeployed, controllerVer, rfc(first), upgradedAt, "Upgrade complete", upgradedAt, rfc(up.Add(time.Second)))

	var l logw
	agentStartup(&l, up.Add(5*time.Second+117*time.Millisecond), c.agentNS, podName, c.name, c.clusterNS)
	o.log(c.agentNS, podName, "fleet-agent", false, l.String())

	if staging {
		w.stagingNoise(c, o)
	} else {
		w.devNoise(c, o)
	}
}

// a pod that restarted once, days ago, after a node reboot: not a crash loop
func (o *out) onceRestartedPod(ns, owner, image, node, hostIP, podIP, created, lastStart, rebootAt, runningSince string) {
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": owner}},
		Spec: corev1.PodSpec{
			ServiceAccountName: owner, DeprecatedServiceAccount: owner,
			Containers: []corev1.Container{{Name: owner, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Resources:              corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: mustQ("100m"), corev1.ResourceMemory: mustQ("70Mi")}},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: corev1.DefaultSchedulerName,
			TerminationGracePeriodSeconds: ptr(int64(30)),
		},
	}
	hash := rsHash(ns + owner)
	dm := o.meta("Deployment", owner, ns, rfc(mustTime(created).Add(-90*24*time.Hour)), map[string]string{"app": owner}, map[string]string{"deployment.kubernetes.io/revision": "2"})
	dm.Generation = 2
	d := &appsv1.Deployment{TypeMeta: tm("apps/v1", "Deployment"), ObjectMeta: dm,
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": owner}}, Template: tpl,
			Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr(intstr.FromString("25%")), MaxSurge: ptr(intstr.FromString("25%"))}},
			RevisionHistoryLimit: ptr(int32(10)), ProgressDeadlineSeconds: ptr(int32(600))},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, Conditions: []appsv1.DeploymentCondition{
			depCond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.", rfc(mustTime(runningSince).Add(8*time.Second)), rfc(mustTime(runningSince).Add(8*time.Second))),
			depCond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", "ReplicaSet \""+owner+"-"+hash+"\" has successfully progressed.", rfc(mustTime(created).Add(20*time.Second)), dm.CreationTimestamp.UTC().Format(time.RFC3339)),
		}}}
	o.add("deployments", d)
	rs := o.replicaSet(d, rsSpec{hash: hash, revision: "2", tpl: tpl, created: created, replicas: 1, ready: 1})
	o.pod(ctrlRef(rs, "apps/v1", "ReplicaSet"), rs.Spec.Template, ns, podState{
		name: rs.Name + "-" + podSfx(ns+owner), created: created, node: node, hostIP: hostIP, podIP: podIP,
		phase: corev1.PodRunning, started: runningSince, restarts: 1, ready: true, schedSince: created, readySince: rfc(mustTime(runningSince).Add(8 * time.Second)),
		lastTerm: &corev1.ContainerStateTerminated{ExitCode: 255, Reason: "Unknown", StartedAt: mt(lastStart), FinishedAt: mt(rebootAt)},
	})
}

func (w *world) stagingNoise(c *fcl, o *out) {
	o.onceRestartedPod("cattle-system", "cattle-cluster-agent", "rancher/rancher-agent:v2.15.0", "staging-1-node-1", "10.40.1.11", "10.42.1.12",
		"2026-11-21T03:12:44Z", "2026-11-21T03:12:50Z", "2026-11-22T02:11:37Z", "2026-11-22T02:14:31Z")

	o.namespace("ops", "2026-03-02T10:11:00Z", nil, nil)
	o.add("configmaps", o.configMap("db-backup-config", "ops", "2026-03-02T10:12:30Z", map[string]string{"app": "db-backup"},
		map[string]string{"BACKUP_BUCKET": "s3://staging-db-backups", "RETENTION_DAYS": "14"}))
	o.add("secrets", o.opaqueSecret("db-backup-credentials", "ops", "2026-03-02T10:12:31Z", map[string]string{"app": "db-backup"},
		map[string]string{"AWS_ACCESS_KEY_ID": "AKIAEXAMPLEEXAMPLE00", "AWS_SECRET_ACCESS_KEY": "not-a-real-secret-example-only"}))

	image := "registry.example.com/ops/pg-backup:1.4.2"
	cj := &batchv1.CronJob{
		TypeMeta:   tm("batch/v1", "CronJob"),
		ObjectMeta: o.meta("CronJob", "db-backup", "ops", "2026-03-02T10:12:35Z", map[string]string{"app": "db-backup"}, nil),
		Spec: batchv1.CronJobSpec{
			Schedule: "0 */3 * * *", ConcurrencyPolicy: batchv1.ForbidConcurrent,
			SuccessfulJobsHistoryLimit: ptr(int32(3)), FailedJobsHistoryLimit: ptr(int32(1)), Suspend: ptr(false),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{BackoffLimit: ptr(int32(2)), Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{
					Name: "backup", Image: image, EnvFrom: []corev1.EnvFromSource{
						{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-backup-config"}}},
						{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-backup-credentials"}}},
					},
					ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				}}, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: corev1.DefaultSchedulerName, TerminationGracePeriodSeconds: ptr(int64(30))},
			}}},
		},
		Status: batchv1.CronJobStatus{LastScheduleTime: mtp("2026-11-28T09:00:00Z"), LastSuccessfulTime: mtp("2026-11-28T09:00:41Z")},
	}
	cj.Generation = 1
	o.add("cronjobs", cj)

	sched := mustTime("2026-11-28T09:00:00Z")
	jobName := fmt.Sprintf("db-backup-%d", sched.Unix()/60) // CronJob names jobs after the scheduled minute
	jm := o.meta("Job", jobName, "ops", "2026-11-28T09:00:00Z", map[string]string{"app": "db-backup"}, map[string]string{"batch.kubernetes.io/cronjob-scheduled-timestamp": "2026-11-28T09:00:00Z"})
	jm.Generation = 1
	jm.OwnerReferences = []metav1.OwnerReference{ctrlRef(cj, "batch/v1", "CronJob")}
	jobUID := string(jm.UID)
	tpl := *cj.Spec.JobTemplate.Spec.Template.DeepCopy()
	tpl.Labels = map[string]string{"batch.kubernetes.io/controller-uid": jobUID, "batch.kubernetes.io/job-name": jobName, "controller-uid": jobUID, "job-name": jobName}
	job := &batchv1.Job{
		TypeMeta: tm("batch/v1", "Job"), ObjectMeta: jm,
		Spec: batchv1.JobSpec{Parallelism: ptr(int32(1)), Completions: ptr(int32(1)), BackoffLimit: ptr(int32(2)), CompletionMode: ptr(batchv1.NonIndexedCompletion),
			Suspend: ptr(false), PodReplacementPolicy: ptr(batchv1.TerminatingOrFailed), ManualSelector: ptr(false),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": jobUID}}, Template: tpl},
		Status: batchv1.JobStatus{
			StartTime: mtp("2026-11-28T09:00:00Z"), CompletionTime: mtp("2026-11-28T09:00:41Z"), Succeeded: 1, Ready: ptr(int32(0)), Terminating: ptr(int32(0)),
			UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
			Conditions: []batchv1.JobCondition{
				{Type: "SuccessCriteriaMet", Status: corev1.ConditionTrue, LastProbeTime: mt("2026-11-28T09:00:41Z"), LastTransitionTime: mt("2026-11-28T09:00:41Z")},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastProbeTime: mt("2026-11-28T09:00:41Z"), LastTransitionTime: mt("2026-11-28T09:00:41Z")},
			},
		},
	}
	o.add("jobs", job)
	podName := jobName + "-" + podSfx(jobName)
	jp := o.pod(ctrlRef(job, "batch/v1", "Job"), tpl, "ops", podState{
		name: podName, created: "2026-11-28T09:00:00Z", node: "staging-1-node-0", hostIP: "10.40.1.10", podIP: "10.42.0.88",
		phase: corev1.PodSucceeded, schedSince: "2026-11-28T09:00:00Z", readySince: "2026-11-28T09:00:41Z",
		terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: mt("2026-11-28T09:00:04Z"), FinishedAt: mt("2026-11-28T09:00:40Z")},
	})
	jp.Finalizers = nil
	podRef := objRef("Pod", "v1", "ops", podName, string(jp.UID), "", jp.ResourceVersion)
	ctrRef := podRef
	ctrRef.FieldPath = "spec.containers{backup}"
	evs := []evSpec{
		{obj: podRef, typ: "Normal", reason: "Scheduled", msg: "Successfully assigned ops/" + podName + " to staging-1-node-0", component: "default-scheduler", host: "staging-1-node-0", first: "2026-11-28T09:00:00Z", eventsV1: true, action: "Binding"},
		{obj: ctrRef, typ: "Normal", reason: "Pulling", msg: "Pulling image \"" + image + "\"", component: "kubelet", host: "staging-1-node-0", first: "2026-11-28T09:00:01Z", last: "2026-11-28T09:00:01Z", count: 1},
		{obj: ctrRef, typ: "Normal", reason: "Pulled", msg: "Successfully pulled image \"" + image + "\" in 2.183s (2.183s including waiting). Image size: 48211023 bytes.", component: "kubelet", host: "staging-1-node-0", first: "2026-11-28T09:00:03Z", last: "2026-11-28T09:00:03Z", count: 1},
		{obj: ctrRef, typ: "Normal", reason: "Created", msg: "Created container: backup", component: "kubelet", host: "staging-1-node-0", first: "2026-11-28T09:00:03Z", last: "2026-11-28T09:00:03Z", count: 1},
		{obj: ctrRef, typ: "Normal", reason: "Started", msg: "Started container backup", component: "kubelet", host: "staging-1-node-0", first: "2026-11-28T09:00:04Z", last: "2026-11-28T09:00:04Z", count: 1},
		{obj: objRef("Job", "batch/v1", "ops", jobName, jobUID, "", jm.ResourceVersion), typ: "Normal", reason: "SuccessfulCreate", msg: "Created pod: " + podName, component: "job-controller", first: "2026-11-28T09:00:00Z", last: "2026-11-28T09:00:00Z", count: 1},
		{obj: objRef("Job", "batch/v1", "ops", jobName, jobUID, "", jm.ResourceVersion), typ: "Normal", reason: "Completed", msg: "Job completed", component: "job-controller", first: "2026-11-28T09:00:41Z", last: "2026-11-28T09:00:41Z", count: 1},
		{obj: objRef("CronJob", "batch/v1", "ops", "db-backup", string(cj.UID), "", cj.ResourceVersion), typ: "Normal", reason: "SuccessfulCreate", msg: "Created job " + jobName, component: "cronjob-controller", first: "2026-11-28T09:00:00Z", last: "2026-11-28T09:00:00Z", count: 1},
		{obj: objRef("CronJob", "batch/v1", "ops", "db-backup", string(cj.UID), "", cj.ResourceVersion), typ: "Normal", reason: "SawCompletedJob", msg: "Saw completed job: " + jobName + ", condition: Complete", component: "cronjob-controller", first: "2026-11-28T09:00:42Z", last: "2026-11-28T09:00:42Z", count: 1},
	}
	for _, e := range evs {
		e.ns = "ops"
		o.add("events", o.event(e))
	}
	o.log("ops", podName, "backup", false,
		"2026-11-28T09:00:04Z starting pg_dump of staging_app\n2026-11-28T09:00:37Z dump complete (412 MiB), uploading to s3://staging-db-backups/2026-11-28T0900.sql.gz\n2026-11-28T09:00:40Z upload complete, pruned 1 backup older than 14 days\n")
}

func (w *world) devNoise(c *fcl, o *out) {
	o.onceRestartedPod("kube-system", "coredns", "rancher/mirrored-coredns-coredns:1.12.3", "dev-1-node-0", "10.50.1.10", "10.42.0.4",
		"2026-11-20T09:12:03Z", "2026-11-20T09:12:10Z", "2026-11-23T22:46:02Z", "2026-11-23T22:47:52Z")

	// a routine rollout of an unrelated app
	depName, image := "whoami", "traefik/whoami:v1.10.3"
	hash := rsHash("dev-whoami")
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": depName}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: depName, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
			Ports:                  []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: corev1.DefaultSchedulerName, TerminationGracePeriodSeconds: ptr(int64(30))},
	}
	dm := o.meta("Deployment", depName, "default", "2026-06-02T14:20:11Z", map[string]string{"app": depName}, map[string]string{"deployment.kubernetes.io/revision": "5"})
	dm.Generation = 5
	d := &appsv1.Deployment{TypeMeta: tm("apps/v1", "Deployment"), ObjectMeta: dm,
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": depName}}, Template: tpl,
			Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr(intstr.FromString("25%")), MaxSurge: ptr(intstr.FromString("25%"))}},
			RevisionHistoryLimit: ptr(int32(10)), ProgressDeadlineSeconds: ptr(int32(600))},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 5, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, Conditions: []appsv1.DeploymentCondition{
			depCond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.", "2026-11-23T22:48:03Z", "2026-11-23T22:48:03Z"),
			depCond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", "ReplicaSet \"whoami-"+hash+"\" has successfully progressed.", "2026-11-28T09:12:36Z", "2026-06-02T14:20:11Z"),
		}}}
	o.add("deployments", d)
	rs := o.replicaSet(d, rsSpec{hash: hash, revision: "5", tpl: tpl, created: "2026-11-28T09:12:30Z", replicas: 1, ready: 1})
	podName := rs.Name + "-" + podSfx("dev-whoami")
	p := o.pod(ctrlRef(rs, "apps/v1", "ReplicaSet"), rs.Spec.Template, "default", podState{
		name: podName, created: "2026-11-28T09:12:30Z", node: "dev-1-node-0", hostIP: "10.50.1.10", podIP: "10.42.0.77",
		phase: corev1.PodRunning, started: "2026-11-28T09:12:31Z", ready: true, schedSince: "2026-11-28T09:12:30Z", readySince: "2026-11-28T09:12:32Z",
	})
	pref := objRef("Pod", "v1", "default", podName, string(p.UID), "", p.ResourceVersion)
	cref := pref
	cref.FieldPath = "spec.containers{whoami}"
	for _, e := range []evSpec{
		{obj: objRef("Deployment", "apps/v1", "default", depName, string(d.UID), "", d.ResourceVersion), typ: "Normal", reason: "ScalingReplicaSet", msg: "Scaled up replica set " + rs.Name + " from 0 to 1", component: "deployment-controller", first: "2026-11-28T09:12:30Z", last: "2026-11-28T09:12:30Z", count: 1},
		{obj: pref, typ: "Normal", reason: "Scheduled", msg: "Successfully assigned default/" + podName + " to dev-1-node-0", component: "default-scheduler", host: "dev-1-node-0", first: "2026-11-28T09:12:30Z", eventsV1: true, action: "Binding"},
		{obj: cref, typ: "Normal", reason: "Pulled", msg: "Container image \"" + image + "\" already present on machine", component: "kubelet", host: "dev-1-node-0", first: "2026-11-28T09:12:31Z", last: "2026-11-28T09:12:31Z", count: 1},
		{obj: cref, typ: "Normal", reason: "Created", msg: "Created container: whoami", component: "kubelet", host: "dev-1-node-0", first: "2026-11-28T09:12:31Z", last: "2026-11-28T09:12:31Z", count: 1},
		{obj: cref, typ: "Normal", reason: "Started", msg: "Started container whoami", component: "kubelet", host: "dev-1-node-0", first: "2026-11-28T09:12:31Z", last: "2026-11-28T09:12:31Z", count: 1},
	} {
		e.ns = "default"
		o.add("events", o.event(e))
	}
}

// agentRBAC adds the agent release's cluster-scoped objects (its ClusterRole and
// ClusterRoleBinding) as the release left them: with Helm's ownership metadata, so a rollback
// of the release finds them its own.
func (o *out) agentRBAC(c *fcl, agentVer, created string) {
	for _, obj := range agentObjects(c.agentOpts(agentVer)) {
		switch r := obj.(type) {
		case *rbacv1.ClusterRole:
			r.ObjectMeta = o.meta("ClusterRole", r.Name, "", created, nil, nil)
			helmOwnedMeta(&r.ObjectMeta, c.agentBundleName(), c.agentNS, agentSetID)
			o.add("clusterroles", r)
		case *rbacv1.ClusterRoleBinding:
			r.ObjectMeta = o.meta("ClusterRoleBinding", r.Name, "", created, nil, nil)
			helmOwnedMeta(&r.ObjectMeta, c.agentBundleName(), c.agentNS, agentSetID)
			o.add("clusterrolebindings", r)
		}
	}
}
