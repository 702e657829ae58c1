package remediate

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The ownership gate over the shapes a stored manifest's objects take: what Helm itself
// accepts (an object carrying the release's ownership, or a new one in the release's
// namespace) passes; what a forged record would need (cluster-scoped or foreign-namespace
// objects, objects another release or nobody owns) is refused, each with the reason.
func TestOwnershipRefusal(t *testing.T) {
	owned := func(release, ns string) (map[string]string, map[string]string) {
		return map[string]string{HelmManagedByLabel: "Helm"}, map[string]string{HelmReleaseNameAnn: release, HelmReleaseNSAnn: ns}
	}
	mine, mineAnn := owned("app", "tenant-a")
	other, otherAnn := owned("billing", "tenant-a")
	for _, tc := range []struct {
		desc       string
		o          Object
		namespaced bool
		exists     bool
		labels     map[string]string
		ann        map[string]string
		want       string // in the refusal; "" for allowed
	}{
		{desc: "new object in the release namespace", o: Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "tenant-a", Name: "settings"}, namespaced: true},
		{desc: "existing object of this release", o: Object{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "tenant-a", Name: "web"}, namespaced: true, exists: true, labels: mine, ann: mineAnn},
		{desc: "existing cluster-scoped object of this release", o: Object{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "app-reader"}, exists: true, labels: mine, ann: mineAnn},
		{desc: "existing object of this release in another namespace", o: Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "monitoring", Name: "app-dashboard"}, namespaced: true, exists: true, labels: mine, ann: mineAnn},
		{desc: "new cluster-scoped object", o: Object{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding", Name: "tenant-admin"}, want: "cluster-scoped and does not exist"},
		{desc: "new object in kube-system", o: Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "kube-system", Name: "x"}, namespaced: true, want: "outside the release's namespace tenant-a"},
		{desc: "existing unowned Deployment", o: Object{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "tenant-a", Name: "fleet-agent"}, namespaced: true, exists: true, labels: map[string]string{"app": "fleet-agent"}, want: "carries no Helm ownership"},
		{desc: "existing object of another release", o: Object{APIVersion: "v1", Kind: "Service", Namespace: "tenant-a", Name: "web"}, namespaced: true, exists: true, labels: other, ann: otherAnn, want: "belongs to Helm release tenant-a/billing"},
		{desc: "system ClusterRole", o: Object{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "system:basic-user"}, exists: true, labels: map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}, want: "carries no Helm ownership"},
		{desc: "annotations without the managed-by label", o: Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "tenant-a", Name: "c"}, namespaced: true, exists: true, ann: mineAnn, want: "carries no Helm ownership"},
		{desc: "same release name in another namespace", o: Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "tenant-a", Name: "c"}, namespaced: true, exists: true, labels: mine, ann: map[string]string{HelmReleaseNameAnn: "app", HelmReleaseNSAnn: "tenant-b"}, want: "belongs to Helm release tenant-b/app"},
	} {
		m := ManifestObject{Object: tc.o, Namespaced: tc.namespaced, Exists: tc.exists, Labels: tc.labels, Annotations: tc.ann}
		got := OwnershipRefusal("tenant-a", "app", m)
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%s: refused: %s", tc.desc, got)
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("%s: refusal %q, want it to say %q", tc.desc, got, tc.want)
		}
	}
}

// Kinds that grant or intercept, and pod specs the Pod Security Standards' baseline forbids,
// are high risk whoever owns them; ordinary objects and restricted pods are not.
func TestHighRiskReason(t *testing.T) {
	for _, tc := range []struct {
		desc string
		doc  string
		want string // in the reason; "" for not high risk
	}{
		{"ClusterRoleBinding", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: x}", "RBAC"},
		{"RoleBinding", "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: x}", "RBAC"},
		{"mutating webhook", "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: x}", "admission webhook"},
		{"admission policy binding", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: x}", "admission policy"},
		{"APIService", "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.x.example.com}", "API aggregation"},
		{"CRD", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: xs.example.com}", "CRD"},
		{"ConfigMap", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}", ""},
		{"restricted Deployment", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      volumes: [{name: tmp, emptyDir: {}}]
      containers:
      - name: web
        securityContext: {privileged: false, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}`, ""},
		{"privileged DaemonSet with hostPath /", `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node-agent}
spec:
  template:
    spec:
      hostPID: true
      hostNetwork: true
      volumes: [{name: root, hostPath: {path: /}}]
      containers:
      - name: agent
        securityContext: {privileged: true}`, "hostPID, hostNetwork, hostPath volume root, privileged container agent"},
		{"CronJob adding a capability", `apiVersion: batch/v1
kind: CronJob
metadata: {name: backup}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          initContainers:
          - name: init
            securityContext: {capabilities: {add: [NET_ADMIN]}}`, "container init adds capabilities [NET_ADMIN]"},
		{"bare Pod with hostIPC", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {hostIPC: true, containers: [{name: c}]}", "hostIPC"},
	} {
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(tc.doc), &doc); err != nil {
			t.Fatalf("%s: %v", tc.desc, err)
		}
		av, _ := doc["apiVersion"].(string)
		kind, _ := doc["kind"].(string)
		got := HighRiskReason(Object{APIVersion: av, Kind: kind, Name: "x"}, doc)
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%s: high risk %q", tc.desc, got)
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("%s: %q, want it to say %q", tc.desc, got, tc.want)
		}
	}
}

// The gate refuses the whole step for one refused object, and high-risk objects the step
// would create or change below --max-risk high; an unchanged high-risk object passes.
func TestGateManifest(t *testing.T) {
	crb := Object{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding", Name: "agent"}
	dep := Object{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "tenant-a", Name: "web"}
	rbac := "grants permissions (RBAC)"
	for _, tc := range []struct {
		desc     string
		verdicts []ObjectVerdict
		max      Risk
		want     []string // in the error; nil for no refusal
	}{
		{"owned, unchanged RBAC at medium", []ObjectVerdict{{Object: crb, Op: OpUnchanged, HighRisk: rbac}, {Object: dep, Op: OpChange}}, Medium, nil},
		{"changed RBAC at medium", []ObjectVerdict{{Object: crb, Op: OpChange, HighRisk: rbac}, {Object: dep, Op: OpChange}}, Medium, []string{"ClusterRoleBinding/agent would be changed", "--max-risk high"}},
		{"created RBAC at high", []ObjectVerdict{{Object: crb, Op: OpCreate, HighRisk: rbac}}, High, nil},
		{"one refused object refuses everything, at any risk", []ObjectVerdict{{Object: dep, Op: OpChange}, {Object: crb, Op: OpRefused, Refused: "cluster-scoped and does not exist"}}, High, []string{"ClusterRoleBinding/agent (cluster-scoped and does not exist)", "nothing written"}},
		{"left alone is not refused", []ObjectVerdict{{Object: Object{APIVersion: "v1", Kind: "Namespace", Name: "tenant-a"}, Op: OpLeftAlone, Refused: "Namespaces are never changed"}}, Medium, nil},
	} {
		err := GateManifest("helm-rollback-1", "tenant-a", "app", tc.verdicts, tc.max)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: refused: %v", tc.desc, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: not refused", tc.desc)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.desc, err, w)
			}
		}
	}
}
