package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// applyFixRoles creates what deploy/rbac/fix.yaml declares, as an administrator would.
func applyFixRoles(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	applyRBAC(t, cs, "fix.yaml")
}

// waitAllowed waits until the RBAC authorizer has seen new bindings.
func waitAllowed(t *testing.T, cfg *rest.Config, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		if err == nil && r.Status.Allowed {
			return
		}
	}
	t.Fatalf("%v never became allowed", attrs)
}

// fix as the ServiceAccount bound to deploy/rbac/scan.yaml alone: it names every permission the
// plan lacks, makes no write, and points at deploy/rbac/fix.yaml; bound to that too, the same
// command carries the plan out and restore puts it back. So fix.yaml is both needed and enough.
func TestFixWithLeastPrivilege(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	reg := startFixRegistry(t)
	good := reg.pushIndex(t, "rancher/kubectl:v1.30.3", v1.Platform{OS: "linux", Architecture: "amd64"})
	for _, tc := range []struct {
		scenario, cluster string
		flags, missing    []string
		exit              int // with both roles bound
	}{
		{"fleet/agent-pending-upgrade-incident", "prod-eu-1", []string{"--max-risk", "medium"},
			[]string{"prod-eu-1: create secrets in namespace cattle-fleet-system", "update secrets sh.helm.release.v1." + agentRelease + ".v4",
				"update secrets sh.helm.release.v1." + agentRelease + ".v5", "patch deployments.apps fleet-agent"}, 0},
		// 3: no SUC controller runs here, so the chain's last step never sees the Plan done on
		// the nodes and ends unverified after --verify-timeout.
		{"suc/image-missing-kubectl-tag", "prod-eu-1", []string{"--max-risk", "medium", "--verify-timeout", "2s", "--image=node-maintenance:upgrade=" + good},
			[]string{"patch plans.upgrade.cattle.io node-maintenance", "delete jobs.batch apply-node-maintenance-on-prod-eu-1-worker-1",
				"delete jobs.batch apply-node-maintenance-on-prod-eu-1-worker-2", "patch nodes prod-eu-1-worker-2 cluster-wide"}, 3},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			env := testenv.Start(t, testenv.WithRBAC(), testenv.WithContextName(tc.cluster))
			if _, err := testenv.Load(t.Context(), env.Config, scenario(tc.scenario), testenv.LoadOptions{Cluster: clusterPick(t, tc.scenario, tc.cluster)}); err != nil {
				t.Fatal(err)
			}
			admin, err := kubernetes.NewForConfig(env.Config)
			if err != nil {
				t.Fatal(err)
			}
			applyScanRole(t, admin)
			saCfg, err := env.ServiceAccountConfig(t.Context(), "cattle-system", "unstick")
			if err != nil {
				t.Fatal(err)
			}
			kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
			if err := testenv.WriteKubeconfig(kubeconfig, saCfg, tc.cluster); err != nil {
				t.Fatal(err)
			}
			f := &fleetOf{kubeconfig: kubeconfig, now: "2026-11-28T09:30:00Z"}
			before := everything(t, env.Config)
			dir := filepath.Join(t.TempDir(), "backup")
			args := append([]string{"fix"}, f.args(append(tc.flags, "--apply", "--yes", "--backup-dir", dir)...)...)

			out, errOut, code := runCtx(context.Background(), t, "", args...)
			t.Logf("fix --apply with the scan role:\n%s%s", out, errOut)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, want := range append(tc.missing, "nothing was changed", "deploy/rbac/fix.yaml") {
				if !strings.Contains(errOut, want) {
					t.Errorf("the error does not name %q", want)
				}
			}
			if d := changed(before, everything(t, env.Config)); len(d) != 0 {
				t.Errorf("objects changed although permissions were missing: %v", d)
			}

			applyFixRoles(t, admin)
			waitAllowed(t, saCfg, authorizationv1.ResourceAttributes{Verb: "patch", Resource: "nodes"})
			waitAllowed(t, saCfg, authorizationv1.ResourceAttributes{Verb: "delete", Resource: "secrets", Namespace: "default"})
			out, errOut, code = runCtx(context.Background(), t, "", args...)
			t.Logf("fix --apply with the scan and fix roles:\n%s%s", out, errOut)
			if code != tc.exit {
				t.Fatalf("exit %d with deploy/rbac/fix.yaml bound, want %d", code, tc.exit)
			}
			if d := changed(before, everything(t, env.Config)); len(d) == 0 {
				t.Errorf("nothing changed")
			}
			rOut, rErr, code := runCtx(context.Background(), t, "", "restore", dir, "--kubeconfig", kubeconfig)
			if code != 0 {
				t.Fatalf("restore exit %d with deploy/rbac/fix.yaml bound:\n%s%s", code, rOut, rErr)
			}
		})
	}
}

// clusterPick is the clusters/<name>/ to load from a multi-cluster bundle, or "".
func clusterPick(t *testing.T, name, cluster string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(scenario(name), "clusters", cluster)); err == nil {
		return cluster
	}
	return ""
}
