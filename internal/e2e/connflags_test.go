package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// kubectl's connection flags reach the writes too: `fix --apply --as` a user who may read but
// not write is judged by the server as that user. The kubeconfig is the administrator's
// (system:masters), so a fix that ignored --as would write; with --as the server's access
// review names what the impersonated ServiceAccount lacks, and nothing changes.
func TestFixApplyAsUserWithoutRightsWritesNothing(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	const cluster = "prod-eu-1"
	name := "fleet/agent-pending-upgrade-incident"
	env := testenv.Start(t, testenv.WithRBAC(), testenv.WithContextName(cluster))
	if _, err := testenv.Load(t.Context(), env.Config, scenario(name), testenv.LoadOptions{Cluster: clusterPick(t, name, cluster)}); err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	applyScanRole(t, admin) // read-only, bound to the ServiceAccount cattle-system/unstick
	if _, err := env.ServiceAccountConfig(t.Context(), "cattle-system", "unstick"); err != nil {
		t.Fatal(err)
	}
	const sa = "system:serviceaccount:cattle-system:unstick"
	as := rest.CopyConfig(env.Config)
	as.Impersonate = rest.ImpersonationConfig{UserName: sa, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	waitAllowed(t, as, authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: "cattle-fleet-system"})

	before := everything(t, env.Config)
	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code := runCtx(context.Background(), t, "", "fix", "--kubeconfig", env.Kubeconfig, "--context", cluster,
		"--as", sa, "--as-group", "system:serviceaccounts", "--as-group", "system:authenticated",
		"-q", "--offline-registry", "--now", "2026-11-28T09:30:00Z", "--max-risk", "medium", "--apply", "--yes", "--backup-dir", dir)
	t.Logf("fix --apply --as %s:\n%s%s", sa, out, errOut)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"nothing was changed", cluster + ": create secrets in namespace cattle-fleet-system", "patch deployments.apps fleet-agent"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the refusal does not say %q", want)
		}
	}
	if d := changed(before, everything(t, env.Config)); len(d) != 0 {
		t.Errorf("objects changed although the impersonated user may not write: %v", d)
	}
}

// --request-timeout bounds each request as kubectl's does: a list the server never answers is
// given up after it, long before --timeout, and the scan says what could not be read.
func TestRequestTimeoutBoundsStalledRead(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	env := testenv.Start(t, testenv.WithContextName("local"))
	proxy := testenv.StartFaultProxy(t, env.Config, 1)
	proxy.SetRules(testenv.Rule{Fault: testenv.Stall, Rate: 1, Methods: []string{http.MethodGet}, Path: "/api/v1/namespaces", Watch: testenv.NoWatch})
	proxy.On()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := proxy.WriteKubeconfig(kubeconfig, "local"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	out, errOut, code := runCtx(ctx, t, "", "scan", "--kubeconfig", kubeconfig, "-q", "--offline-registry", "-o", "json",
		"--request-timeout", "2s", "--timeout", "2m")
	took := time.Since(start)
	t.Logf("scan took %s, exit %d\n%.1500s\n%.1500s", took.Round(time.Millisecond), code, out, errOut)
	if proxy.Counts()[testenv.Stall] == 0 {
		t.Fatalf("no request was stalled: the test did not test anything (%s)", proxy.Summary())
	}
	if took > 40*time.Second {
		t.Errorf("a stalled read with --request-timeout 2s took %s (--timeout is 2m)", took)
	}
	if code == 0 || code == 2 {
		t.Errorf("exit %d: a cluster that could not be listed is not an all-clear", code)
	}
	if !strings.Contains(out+errOut, "namespaces") {
		t.Errorf("the output does not say the namespaces could not be read")
	}
}
