package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// serveFindings reads serve's /api/v1/findings.
func serveFindings(t *testing.T, addr string) scanResult {
	t.Helper()
	var r scanResult
	b := httpGet(t, "http://"+addr+"/api/v1/findings")
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("/api/v1/findings is not JSON: %v\n%s", err, b)
	}
	return r
}

// waitDenied waits until the RBAC authorizer has seen a role lose a permission.
func waitDenied(t *testing.T, cfg *rest.Config, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 150; i++ {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		if err == nil && !r.Status.Allowed {
			return
		}
		select {
		case <-t.Context().Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("%v stayed allowed", attrs)
}

// Least privilege (issue 8, item 5): serve and collect as the ServiceAccount bound to
// deploy/rbac/scan.yaml alone, on a server that authorizes with RBAC (scan is
// TestScanWithLeastPrivilege, fix TestFixWithLeastPrivilege). serve becomes ready, lists the
// example's findings with no error and logs nothing forbidden; collect writes a bundle with no
// read error that scans to the same findings. With Secrets taken out of the role, serve still
// becomes ready and names the one permission it lacks: the only forbidden error expected.
func TestServeRBACScanRoleIsEnough(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	admin, role, saCfg, kubeconfig := scanRoleEnv(t)
	waitAllowed(t, saCfg, authorizationv1.ResourceAttributes{Verb: "watch", Resource: "secrets"})
	// The ServiceAccount is not an administrator: it cannot write, nor read what the role
	// leaves out.
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Resource: "secrets", Namespace: "cattle-system"},
		{Verb: "patch", Resource: "deployments", Group: "apps", Namespace: "cattle-fleet-system"},
		{Verb: "list", Resource: "roles", Group: "rbac.authorization.k8s.io"},
		{Verb: "list", Resource: "services"},
	} {
		cs, _ := kubernetes.NewForConfig(saCfg)
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		if err != nil || r.Status.Allowed {
			t.Fatalf("the ServiceAccount may %s %s (%v): it is not least-privilege", attrs.Verb, attrs.Resource, err)
		}
	}

	// The reference: the same scan as the ServiceAccount.
	out, errOut, _ := run(t, "scan", "--kubeconfig", kubeconfig, "--now", now, "-o", "json", "-q", "--offline-registry")
	want := parse(t, out, errOut)
	if len(want.Findings) == 0 || len(want.Errors) != 0 {
		t.Fatalf("scan as the ServiceAccount: %d findings, errors %+v", len(want.Findings), want.Errors)
	}

	t.Run("serve", func(t *testing.T) {
		addr, stderr := runServe(t, "--kubeconfig", kubeconfig, "-v")
		got := serveFindings(t, addr)
		if len(got.Errors) != 0 {
			t.Errorf("serve as the ServiceAccount reported errors: %+v", got.Errors)
		}
		if len(got.Findings) == 0 {
			t.Fatal("serve as the ServiceAccount lists no findings")
		}
		// serve probes no registry; every finding it makes, scan makes too, and the root
		// causes of the example are there.
		ids := map[string]bool{}
		for _, f := range want.Findings {
			ids[f.ID] = true
		}
		for _, f := range got.Findings {
			if !ids[f.ID] {
				t.Errorf("serve found %s on %s, which the scan did not", f.ID, f.Object.Name)
			}
		}
		metrics := string(httpGet(t, "http://"+addr+"/metrics"))
		if !strings.Contains(metrics, "unstick_caches_synced 1") || !strings.Contains(metrics, "unstick_findings{") {
			t.Errorf("serve's metrics do not show synced caches and findings")
		}
		if s := strings.ToLower(stderr.String()); strings.Contains(s, "forbidden") || strings.Contains(s, "cannot list") || strings.Contains(s, "cannot watch") {
			t.Errorf("serve as the ServiceAccount logged a permission problem:\n%s", stderr.String())
		}
	})

	t.Run("collect", func(t *testing.T) {
		bundle := filepath.Join(t.TempDir(), "sa.tar.gz")
		if _, errOut, code := run(t, "collect", "--kubeconfig", kubeconfig, "--to", bundle, "-q"); code != 0 {
			t.Fatalf("collect as the ServiceAccount: exit %d\n%s", code, errOut)
		}
		meta := string(untar(t, bundle)["unstick-bundle.yaml"])
		if strings.Contains(meta, "errors:") {
			t.Errorf("collect as the ServiceAccount recorded read errors:\n%s", meta)
		}
		out, errOut, _ := run(t, "scan", "--from", bundle, "--now", now, "-o", "json", "--offline-registry")
		got := parse(t, out, errOut)
		if d := diff(want.keys(), got.keys()); d != "" {
			t.Errorf("the ServiceAccount's bundle scans differently from its live scan:\n%s", d)
		}
	})

	t.Run("images, preflight and the fix plan", func(t *testing.T) {
		for _, args := range [][]string{
			{"images", "-o", "json"},
			{"preflight", "-o", "json", "--now", now},
			{"fix", "-o", "json", "--now", now},
		} {
			out, errOut, code := run(t, append(args, "--kubeconfig", kubeconfig, "-q", "--offline-registry")...)
			if code == 1 || code == 2 {
				t.Errorf("%s as the ServiceAccount: exit %d\n%s", args[0], code, errOut)
			}
			if s := strings.ToLower(out + errOut); strings.Contains(s, "forbidden") {
				t.Errorf("%s as the ServiceAccount met a forbidden read:\n%s%s", args[0], out, errOut)
			}
		}
	})

	t.Run("serve --authn=on", func(t *testing.T) { serveAuthnOn(t, admin, saCfg, kubeconfig) })

	t.Run("serve without secrets", func(t *testing.T) {
		// serve does not wait forever on a list the server refuses: it reports the missing
		// permission, as scan does, and goes ready.
		cur, err := admin.RbacV1().ClusterRoles().Get(t.Context(), role.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Rules = withoutResource(cur.Rules, "secrets")
		if _, err := admin.RbacV1().ClusterRoles().Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitDenied(t, saCfg, authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets"})
		addr, _ := runServe(t, "--kubeconfig", kubeconfig)
		got := serveFindings(t, addr)
		var other []string
		named := false
		for _, e := range got.Errors {
			if strings.Contains(e.Message, "secrets") && strings.Contains(strings.ToLower(e.Message), "forbidden") {
				named = true
			} else {
				other = append(other, e.Message)
			}
		}
		if !named {
			t.Errorf("serve without Secrets access does not name the missing permission: %+v", got.Errors)
		}
		if len(other) != 0 {
			t.Errorf("errors other than the missing Secrets permission: %v", other)
		}
		if len(got.Findings) == 0 {
			t.Error("serve without Secrets access lists no findings at all")
		}
	})
}
