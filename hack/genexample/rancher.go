package main

// Rancher's own Kubernetes upgrades in the example fleet (docs/rancher.md):
//
//   - prod-eu-2, an RKE2 cluster Rancher provisioned, upgraded from v1.30.8+rke2r1 to
//     v1.31.4+rke2r1: etcd and control plane are done, the worker tier is stuck draining
//     prod-eu-2-worker-6mq2r because shop/checkout's PodDisruptionBudget (minAvailable 1,
//     one replica) allows no eviction. The management side holds the provisioning Cluster,
//     the RKEControlPlane with the planner's "draining worker node(s) …" message, the CAPI
//     Machines and the machine-plan Secrets with the drain annotations; the cluster itself
//     holds the cordoned node, the pod and the budget.
//   - edge-rke2-7, an imported RKE2 cluster with Rancher's version management on: Rancher's
//     rke2-master-plan/rke2-worker-plan (rancher-managed=true) have reported the control plane
//     "being upgraded" for two hours, and Rancher appended upgrade.cattle.io/disable Exists to
//     the operators' own os-patch Plan, which selects no node until Rancher's upgrade ends.
//
// Rancher's kinds are written as untyped objects with the field names of rancher/rancher
// pkg/apis (provisioning.cattle.io/v1, rke.cattle.io/v1, management.cattle.io/v3) and CAPI
// v1beta2 (the storage version of sigs.k8s.io/cluster-api v1.14): those modules are not
// dependencies of this one.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	rkeOld = "v1.30.8+rke2r1"
	rkeNew = "v1.31.4+rke2r1"
)

// rancherClusters are the two clusters this file adds to the bundle's metadata.
var rancherClusters = []struct{ dir, id string }{
	{"prod-eu-2", "c-m-8x2kq7vd"},
	{"edge-rke2-7", "c-9qzbw"},
}

func (w *world) rancher() error {
	mo := newOut(filepath.Join(w.outDir, "clusters", "local"), false, 190004113)
	if err := w.provisionedPDB(mo); err != nil {
		return err
	}
	if err := w.importedDisabledPlan(mo); err != nil {
		return err
	}
	return mo.flush()
}

func rcond(typ, status, reason, msg, at string) map[string]any {
	c := map[string]any{"type": typ, "status": status, "lastUpdateTime": at, "lastTransitionTime": at}
	if reason != "" {
		c["reason"] = reason
	}
	if msg != "" {
		c["message"] = msg
	}
	return c
}

func (o *out) untyped(apiVersion, kind, ns, name, created string, labels, annotations map[string]string) u {
	m := o.meta(kind, name, ns, created, labels, annotations)
	md := map[string]any{"name": name, "uid": string(m.UID), "resourceVersion": m.ResourceVersion, "creationTimestamp": created}
	if ns != "" {
		md["namespace"] = ns
	}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	return u{"apiVersion": apiVersion, "kind": kind, "metadata": md}
}

// nodePlanBody is a machine plan as the planner writes it. Its config file carries the
// cluster's join token, which is why unstick keeps only its checksum.
func nodePlanBody(version, joinServer string) []byte {
	cfg, _ := json.Marshal(map[string]any{
		"token":  "K10" + sha256hex("prod-eu-2-token") + "::server:" + sha256hex("prod-eu-2-secret")[:32],
		"server": joinServer,
	})
	b, _ := json.Marshal(map[string]any{
		"files": []any{map[string]any{"path": "/etc/rancher/rke2/config.yaml.d/50-rancher.yaml", "content": base64.StdEncoding.EncodeToString(cfg)}},
		"instructions": []any{map[string]any{"name": "install", "image": "registry.rancher.com/rancher/system-agent-installer-rke2:" + dashed(version),
			"command": "sh", "args": []string{"-c", "run.sh"}, "env": []string{"RESTART_STAMP=" + sha256hex(version)[:16], "INSTALL_RKE2_EXEC=agent"}}},
		"probes": map[string]any{"kubelet": map[string]any{"initialDelaySeconds": 1, "timeoutSeconds": 5, "successThreshold": 1, "failureThreshold": 2,
			"httpGetAction": map[string]any{"url": "http://127.0.0.1:10248/healthz"}}},
	})
	return b
}

func dashed(v string) string {
	out := []byte(v)
	for i, c := range out {
		if c == '+' {
			out[i] = '-'
		}
	}
	return string(out)
}

func checksum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// agentOutput is applied-output as rancher-system-agent writes it: gzip(JSON of
// instruction name → output bytes).
func agentOutput(lines string) []byte {
	b, _ := json.Marshal(map[string][]byte{"install": []byte(lines)})
	return gz(b)
}

func (w *world) provisionedPDB(mo *out) error {
	const (
		name, ns, id = "prod-eu-2", "fleet-default", "c-m-8x2kq7vd"
		started      = "2026-11-28T07:05:12Z" // the version bump
		drainFrom    = "2026-11-28T07:41:37Z" // the worker tier's first drain
	)
	joinServer := "https://10.30.1.11:9345"
	pc := mo.untyped("provisioning.cattle.io/v1", "Cluster", ns, name, "2026-10-02T11:20:05Z", map[string]string{"env": "production"}, nil)
	pc["spec"] = map[string]any{
		"kubernetesVersion": rkeNew,
		"rkeConfig": map[string]any{
			"upgradeStrategy": map[string]any{
				"controlPlaneConcurrency": "1", "workerConcurrency": "1",
				"workerDrainOptions": map[string]any{"enabled": true, "deleteEmptyDirData": true, "ignoreDaemonSets": true, "timeout": 120, "gracePeriod": -1},
			},
			"machinePools": []any{
				map[string]any{"name": "cp", "quantity": 1, "etcdRole": true, "controlPlaneRole": true},
				map[string]any{"name": "worker", "quantity": 2, "workerRole": true},
			},
		},
	}
	waitMsg := "draining worker node(s) prod-eu-2-worker-6mq2r: error draining machine prod-eu-2-worker-6mq2r: " + drainErr
	pc["status"] = map[string]any{"clusterName": id, "ready": true, "observedGeneration": 9,
		"conditions": []any{rcond("Ready", "True", "", "", "2026-10-02T11:41:12Z"), rcond("Provisioned", "True", "", "", "2026-10-02T11:41:12Z"),
			rcond("Updated", "Unknown", "Waiting", waitMsg, drainFrom)}}
	mo.add("clusters.provisioning.cattle.io", pc)

	cp := mo.untyped("rke.cattle.io/v1", "RKEControlPlane", ns, name, "2026-10-02T11:20:06Z", map[string]string{"rke.cattle.io/cluster-name": name}, nil)
	cp["spec"] = map[string]any{"kubernetesVersion": rkeNew, "clusterName": name, "managementClusterName": id,
		"upgradeStrategy": pc["spec"].(map[string]any)["rkeConfig"].(map[string]any)["upgradeStrategy"]}
	cp["status"] = map[string]any{"appliedSpec": map[string]any{"kubernetesVersion": rkeOld}, "agentConnected": true, "ready": true, "initialized": true,
		"conditions": []any{rcond("Ready", "True", "", "", "2026-10-02T11:41:12Z"), rcond("Bootstrapped", "True", "", "", "2026-10-02T11:30:40Z"),
			rcond("Reconciled", "Unknown", "Waiting", waitMsg, drainFrom)}}
	mo.add("rkecontrolplanes.rke.cattle.io", cp)

	capi := mo.untyped("cluster.x-k8s.io/v1beta2", "Cluster", ns, name, "2026-10-02T11:20:06Z", map[string]string{"rke.cattle.io/cluster-name": name}, nil)
	capi["spec"] = map[string]any{"controlPlaneRef": map[string]any{"apiGroup": "rke.cattle.io", "kind": "RKEControlPlane", "name": name},
		"infrastructureRef": map[string]any{"apiGroup": "rke.cattle.io", "kind": "RKECluster", "name": name}}
	capi["status"] = map[string]any{"phase": "Provisioned", "initialization": map[string]any{"infrastructureProvisioned": true, "controlPlaneInitialized": true}}
	mo.add("clusters.cluster.x-k8s.io", capi)

	type mach struct {
		suffix, pool, ip string
		plan             string // "new", "old", "draining"
	}
	machines := []mach{{"7k2xq", "cp", "10.30.1.11", "new"}, {"6mq2r", "worker", "10.30.1.21", "draining"}, {"9tx4b", "worker", "10.30.1.22", "old"}}
	do := newOut(filepath.Join(w.outDir, "clusters", name), false, 77012081)
	for _, m := range machines {
		mname := name + "-" + m.pool + "-" + m.suffix
		roles := map[string]string{"rke.cattle.io/worker-role": "true"}
		nodeRoles := []string{"worker"}
		if m.pool == "cp" {
			roles = map[string]string{"rke.cattle.io/etcd-role": "true", "rke.cattle.io/control-plane-role": "true"}
			nodeRoles = cpRoles
		}
		labels := map[string]string{"cluster.x-k8s.io/cluster-name": name, "rke.cattle.io/cluster-name": name, "rke.cattle.io/rke-machine-pool-name": m.pool}
		for k, v := range roles {
			labels[k] = v
		}
		kubelet := rkeOld
		if m.plan == "new" {
			kubelet = rkeNew
		}
		// CAPI v1beta2 conditions are metav1.Conditions: reason and lastTransitionTime required.
		mcond := func(typ, status, reason, msg, at string) map[string]any {
			return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg, "lastTransitionTime": at}
		}
		reconciled := mcond("Reconciled", "True", "Reconciled", "", "2026-11-28T07:38:02Z")
		if m.plan == "draining" {
			reconciled = mcond("Reconciled", "Unknown", "Waiting", "error draining machine "+mname+": "+drainErr, drainFrom)
		}
		mc := mo.untyped("cluster.x-k8s.io/v1beta2", "Machine", ns, mname, "2026-10-02T11:21:00Z", labels, nil)
		mc["spec"] = map[string]any{"clusterName": name,
			"bootstrap":         map[string]any{"configRef": map[string]any{"apiGroup": "rke.cattle.io", "kind": "RKEBootstrap", "name": mname}, "dataSecretName": mname + "-machine-bootstrap"},
			"infrastructureRef": map[string]any{"apiGroup": "rke-machine.cattle.io", "kind": "CustomMachine", "name": mname}}
		mc["status"] = map[string]any{"phase": "Running",
			"initialization": map[string]any{"bootstrapDataSecretCreated": true, "infrastructureProvisioned": true},
			"nodeRef":        map[string]any{"name": mname},
			"nodeInfo": map[string]any{"kubeletVersion": kubelet, "kubeProxyVersion": kubelet, "architecture": "amd64", "operatingSystem": "linux", "osImage": slesImage,
				"kernelVersion": slesKernel, "containerRuntimeVersion": runtimeVer, "bootID": string(uid("boot|" + mname)), "machineID": sha256hex("machine|" + mname)[:32],
				"systemUUID": string(uid("system|" + mname))},
			"conditions": []any{mcond("Ready", "True", "Ready", "", "2026-10-02T11:40:00Z"), mcond("BootstrapConfigReady", "True", "Ready", "", "2026-10-02T11:21:30Z"),
				mcond("InfrastructureReady", "True", "Ready", "", "2026-10-02T11:21:30Z"), mcond("PlanApplied", "True", "PlanApplied", "", "2026-11-28T07:38:02Z"), reconciled}}
		mo.add("machines.cluster.x-k8s.io", mc)
		boot := mo.untyped("rke.cattle.io/v1", "RKEBootstrap", ns, mname, "2026-10-02T11:21:00Z", labels, nil)
		boot["spec"] = map[string]any{"clusterName": name}
		boot["status"] = map[string]any{"ready": true, "dataSecretName": mname + "-machine-bootstrap"}
		mo.add("rkebootstraps.rke.cattle.io", boot)

		// The machine-plan Secret: the current plan, and what rancher-system-agent wrote back.
		cur, old := nodePlanBody(rkeNew, joinServer), nodePlanBody(rkeOld, joinServer)
		data := map[string][]byte{"plan": cur, "appliedPlan": cur, "applied-checksum": []byte(checksum(cur)),
			"probe-statuses": []byte(`{"kubelet":{"healthy":true,"successCount":1,"failureCount":0}}`),
			"applied-output": agentOutput("[INFO]  finding release for channel stable\n[INFO]  using " + rkeNew + " as release\n[INFO]  installing rke2 agent\n")}
		ann := map[string]string{"rke.cattle.io/join-url": "https://" + m.ip + ":9345", "rke.cattle.io/joined-to": joinServer}
		if m.plan != "new" {
			// Not yet upgraded: the planner has not written the new plan (workers wait for
			// the drain of the one before them).
			data["plan"], data["appliedPlan"], data["applied-checksum"] = old, old, []byte(checksum(old))
			data["applied-output"] = agentOutput("[INFO]  using " + rkeOld + " as release\n[INFO]  installing rke2 agent\n")
		}
		if m.plan == "draining" {
			opts := `{"deleteEmptyDirData":true,"disableEviction":false,"enabled":true,"force":false,"gracePeriod":-1,"ignoreDaemonSets":true,"ignoreErrors":false,"postDrainHooks":null,"preDrainHooks":null,"skipWaitForDeleteTimeoutSeconds":0,"timeout":120}`
			ann["rke.cattle.io/drain-options"] = opts
			ann["rke.cattle.io/drain-error"] = drainErr
		}
		sec := &corev1.Secret{TypeMeta: tm("v1", "Secret"), ObjectMeta: mo.meta("Secret", mname+"-machine-plan", ns, "2026-10-02T11:21:01Z",
			map[string]string{"rke.cattle.io/machine-name": mname, "rke.cattle.io/cluster-name": name, "rke.cattle.io/rke-machine-pool-name": m.pool}, ann),
			Type: "rke.cattle.io/machine-plan", Data: data}
		for k, v := range roles {
			sec.Labels[k] = v
		}
		mo.add("secrets.machine-plan", sec)

		// The node in the downstream cluster.
		n := rke2Node(mname, m.ip, "10.42.0.0/24", nodeRoles, 8, 32863700, "2026-10-02T11:25:00Z", "2026-11-28T07:36:40Z")
		n.kubelet = kubelet
		node := do.node(n)
		if m.plan == "draining" {
			node.Spec.Unschedulable = true
			node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule, TimeAdded: mtp(drainFrom)})
		}
	}
	mo.namespaceAs("namespaces.rancher", id, "2026-10-02T11:20:07Z")
	log := "[INFO ] waiting for infrastructure ready\n[INFO ] configuring bootstrap node(s) prod-eu-2-cp-7k2xq: waiting for plan to be applied\n" +
		"[INFO ] provisioning done\n[INFO ] configuring etcd node(s) prod-eu-2-cp-7k2xq: waiting for plan to be applied\n" +
		"[INFO ] configuring control plane node(s) prod-eu-2-cp-7k2xq: waiting for probes: kube-apiserver, kube-controller-manager, kube-scheduler\n" +
		"[INFO ] draining worker node(s) prod-eu-2-worker-6mq2r: draining node\n[ERROR] " + waitMsg + "\n"
	mo.add("configmaps", mo.configMap("provisioning-log", id, "2026-10-02T11:20:08Z", nil, map[string]string{"log": log}))

	// Downstream: the shop's single-replica StatefulSet pod on the draining node and its budget.
	do.namespaceAs("namespaces", "shop", "2026-10-05T09:00:00Z")
	ss := &appsv1.StatefulSet{TypeMeta: tm("apps/v1", "StatefulSet"), ObjectMeta: do.meta("StatefulSet", "checkout", "shop", "2026-10-05T09:01:00Z", map[string]string{"app": "checkout"}, nil)}
	pod := &corev1.Pod{TypeMeta: tm("v1", "Pod"), ObjectMeta: do.meta("Pod", "checkout-0", "shop", "2026-11-20T14:02:11Z", map[string]string{"app": "checkout", "apps.kubernetes.io/pod-index": "0"}, nil),
		Spec: corev1.PodSpec{NodeName: name + "-worker-6mq2r", Containers: []corev1.Container{{Name: "checkout", Image: "registry.example.com/shop/checkout:2.4.1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt("2026-11-20T14:02:40Z")}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "checkout", Ready: true, Image: "registry.example.com/shop/checkout:2.4.1",
				ImageID: "registry.example.com/shop/checkout@sha256:" + sha256hex("checkout:2.4.1"), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt("2026-11-20T14:02:30Z")}}}}}}
	pod.OwnerReferences = []metav1.OwnerReference{ownerRef("apps/v1", "StatefulSet", "checkout", string(ss.UID))}
	do.add("pods", pod)
	minAvail := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{TypeMeta: tm("policy/v1", "PodDisruptionBudget"), ObjectMeta: do.meta("PodDisruptionBudget", "checkout", "shop", "2026-10-05T09:01:00Z", nil, nil),
		Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvail, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "checkout"}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1, DisruptionsAllowed: 0}}
	do.add("poddisruptionbudgets", pdb)
	return do.flush()
}

// drainErr is kubectl drain's eviction error as Rancher's drain records it in
// rke.cattle.io/drain-error (k8s.io/kubectl pkg/drain).
const drainErr = `error when evicting pods/"checkout-0" -n "shop" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`

func (o *out) namespaceAs(resource, name, created string) {
	ns := &corev1.Namespace{TypeMeta: tm("v1", "Namespace"), ObjectMeta: o.meta("Namespace", name, "", created, nil, nil),
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	o.add(resource, ns)
}

func (w *world) importedDisabledPlan(mo *out) error {
	const name, id, since = "edge-rke2-7", "c-9qzbw", "2026-11-28T07:34:52Z"
	mc := mo.untyped("management.cattle.io/v3", "Cluster", "", id, "2026-07-14T08:00:00Z", map[string]string{"provider.cattle.io": "rke2"}, nil)
	mc["spec"] = map[string]any{"displayName": name, "fleetWorkspaceName": "fleet-default", "internal": false,
		"rke2Config": map[string]any{"kubernetesVersion": rkeNew, "rke2upgradeStrategy": map[string]any{"serverConcurrency": 1, "workerConcurrency": 1}}}
	mc["status"] = map[string]any{"driver": "imported", "provider": "rke2", "version": map[string]any{"gitVersion": rkeOld},
		"conditions": []any{rcond("Ready", "True", "", "", "2026-07-14T08:05:00Z"), rcond("Connected", "True", "", "", "2026-11-28T06:00:00Z"),
			rcond("Upgraded", "Unknown", "", "controlplane node [edge-rke2-7-cp-1] being upgraded", since)}}
	mo.add("clusters.management.cattle.io", mc)
	for _, s := range []struct{ name, value string }{{"server-url", rancherURL}, {"system-default-registry", ""}, {"imported-cluster-version-management", "true"}} {
		st := mo.untyped("management.cattle.io/v3", "Setting", "", s.name, "2026-01-12T09:10:00Z", nil, nil)
		st["value"], st["default"], st["source"] = s.value, "", ""
		mo.add("settings.management.cattle.io", st)
	}

	do := newOut(filepath.Join(w.outDir, "clusters", name), false, 55120041)
	do.namespaceAs("namespaces", "cattle-system", "2026-07-14T08:01:00Z")
	do.namespaceAs("namespaces", "system-upgrade", "2026-08-01T10:00:00Z")
	for _, n := range []struct{ name, ip string }{{"edge-rke2-7-cp-1", "10.60.0.11"}, {"edge-rke2-7-worker-1", "10.60.0.21"}} {
		roles := []string{"worker"}
		if n.name == "edge-rke2-7-cp-1" {
			roles = cpRoles
		}
		spec := rke2Node(n.name, n.ip, "10.42.0.0/24", roles, 4, 16303300, "2026-07-14T08:00:30Z", "2026-11-20T02:00:00Z")
		spec.kubelet = rkeOld
		node := do.node(spec)
		node.Labels["upgrade.cattle.io/kubernetes-upgrade"] = "true"
		node.Labels["ops.example.com/os-patch"] = "enabled"
		if n.name == "edge-rke2-7-cp-1" {
			node.Spec.Unschedulable = true
		}
	}
	master := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "node-role.kubernetes.io/control-plane", Operator: metav1.LabelSelectorOpIn, Values: []string{"true"}},
		{Key: "upgrade.cattle.io/kubernetes-upgrade", Operator: metav1.LabelSelectorOpIn, Values: []string{"true"}}}}
	worker := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "node-role.kubernetes.io/control-plane", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"}},
		{Key: "upgrade.cattle.io/kubernetes-upgrade", Operator: metav1.LabelSelectorOpIn, Values: []string{"true"}}}}
	plan := func(pname, ns string, labels map[string]string, sel *metav1.LabelSelector, image, version string, applying []string, prepare bool) u {
		p := do.untyped("upgrade.cattle.io/v1", "Plan", ns, pname, since, labels, nil)
		spec := map[string]any{"concurrency": 1, "nodeSelector": sel, "serviceAccountName": "system-upgrade-controller", "cordon": true,
			"upgrade": map[string]any{"image": image}, "version": version,
			"tolerations": []any{map[string]any{"operator": "Exists"}}}
		if prepare {
			spec["prepare"] = map[string]any{"image": image, "args": []string{"prepare", "rke2-master-plan"}}
		}
		p["spec"] = spec
		st := map[string]any{"latestVersion": version, "latestHash": sha256hex(pname + version)[:56],
			"conditions": []any{map[string]any{"type": "LatestResolved", "status": "True", "reason": "Version", "lastUpdateTime": since}}}
		if len(applying) > 0 {
			st["applying"] = applying
		}
		p["status"] = st
		return p
	}
	managed := map[string]string{"rancher-managed": "true"}
	do.add("plans", plan("rke2-master-plan", "cattle-system", managed, master, "rancher/rke2-upgrade", dashed(rkeNew), []string{"edge-rke2-7-cp-1"}, false))
	do.add("plans", plan("rke2-worker-plan", "cattle-system", managed, worker, "rancher/rke2-upgrade", dashed(rkeNew), nil, true))
	// The operators' own Plan: Rancher appended the disable expression to its selector.
	user := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "ops.example.com/os-patch", Operator: metav1.LabelSelectorOpIn, Values: []string{"enabled"}},
		{Key: "upgrade.cattle.io/disable", Operator: metav1.LabelSelectorOpExists}}}
	up := plan("os-patch", "system-upgrade", map[string]string{"app.kubernetes.io/managed-by": "ops"}, user, "ghcr.io/example-ops/os-patch", "2026.11", nil, false)
	up["metadata"].(map[string]any)["creationTimestamp"] = "2026-11-02T10:00:00Z"
	do.add("plans", up)
	return do.flush()
}
