package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// applyScanRole creates what deploy/rbac/scan.yaml declares, as an administrator would.
// scanRoleEnv starts a server that authorizes with RBAC, holding the example's management
// cluster, with deploy/rbac/scan.yaml bound to the ServiceAccount cattle-system/unstick;
// kubeconfig is a file that talks to it as that ServiceAccount, saCfg the same as a config.
func scanRoleEnv(t *testing.T) (admin kubernetes.Interface, role *rbacv1.ClusterRole, saCfg *rest.Config, kubeconfig string) {
	t.Helper()
	env := testenv.Start(t, testenv.WithRBAC(), testenv.WithContextName("local"))
	if _, err := testenv.Load(t.Context(), env.Config, example, testenv.LoadOptions{Cluster: "local"}); err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	role = applyScanRole(t, admin)
	if saCfg, err = env.ServiceAccountConfig(t.Context(), "cattle-system", "unstick"); err != nil {
		t.Fatal(err)
	}
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, saCfg, "local"); err != nil {
		t.Fatal(err)
	}
	return admin, role, saCfg, kubeconfig
}

// withoutResource is rules with resource taken out of every rule.
func withoutResource(rules []rbacv1.PolicyRule, resource string) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, rule := range rules {
		var res []string
		for _, r := range rule.Resources {
			if r != resource {
				res = append(res, r)
			}
		}
		rule.Resources = res
		out = append(out, rule)
	}
	return out
}

func applyScanRole(t *testing.T, cs kubernetes.Interface) *rbacv1.ClusterRole {
	t.Helper()
	roles := applyRBAC(t, cs, "scan.yaml")
	if len(roles) != 1 {
		t.Fatalf("deploy/rbac/scan.yaml has %d ClusterRoles, want 1", len(roles))
	}
	return roles[0]
}

// applyRBAC creates what deploy/rbac/FILE declares, as an administrator would, and returns
// its ClusterRoles.
func applyRBAC(t *testing.T, cs kubernetes.Interface, file string) []*rbacv1.ClusterRole {
	t.Helper()
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "rbac", file))
	if err != nil {
		t.Fatal(err)
	}
	var roles []*rbacv1.ClusterRole
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "ServiceAccount":
			var sa corev1.ServiceAccount
			mustUnmarshal(t, doc, &sa)
			_, _ = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sa.Namespace}}, metav1.CreateOptions{})
			if _, err := cs.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, &sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		case "ClusterRole":
			role := &rbacv1.ClusterRole{}
			mustUnmarshal(t, doc, role)
			if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			roles = append(roles, role)
		case "ClusterRoleBinding":
			var crb rbacv1.ClusterRoleBinding
			mustUnmarshal(t, doc, &crb)
			if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &crb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("unexpected %q in deploy/rbac/%s", meta.Kind, file)
		}
	}
	return roles
}

func mustUnmarshal(t *testing.T, doc []byte, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Fatal(err)
	}
}

// A scan as the ServiceAccount bound to deploy/rbac/scan.yaml reads everything it needs (no
// errors) on a server that authorizes with RBAC; with Secrets taken out of the role the scan
// still completes and names the gap.
func TestScanWithLeastPrivilege(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	admin, role, _, kubeconfig := scanRoleEnv(t)
	out, errOut, code := run(t, "scan", "--kubeconfig", kubeconfig, "--now", now, "-o", "json", "-q")
	r := parse(t, out, errOut)
	if len(r.Errors) != 0 {
		t.Errorf("scan as the least-privilege ServiceAccount reported errors: %+v", r.Errors)
	}
	if code != 3 || len(r.Findings) == 0 {
		t.Errorf("exit %d with %d findings; the management cluster of the example has findings", code, len(r.Findings))
	}

	// Take Secrets away: the scan goes on and says what it could not read.
	rules := withoutResource(role.Rules, "secrets")
	cur, err := admin.RbacV1().ClusterRoles().Get(t.Context(), role.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Rules = rules
	if _, err := admin.RbacV1().ClusterRoles().Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run(t, "scan", "--kubeconfig", kubeconfig, "--now", now, "-o", "json", "-q")
	r = parse(t, out, errOut)
	if code == 1 || code == 2 {
		t.Fatalf("scan without Secrets access failed outright (exit %d): %s", code, errOut)
	}
	found := false
	for _, e := range r.Errors {
		if strings.Contains(e.Message, "secrets") && strings.Contains(e.Message, "forbidden") {
			found = true
		}
	}
	if !found {
		t.Errorf("the missing Secrets permission is not reported under errors: %+v", r.Errors)
	}
}
