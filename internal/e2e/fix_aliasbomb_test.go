package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/unstick-dev/unstick/internal/yamlbudget/bombtest"
)

// bombRelease stores release tenant-a/app as a tenant could: revision 1 deployed, its manifest
// the bomb, and revision 2 pending-upgrade for hours with a plain manifest.
func bombRelease(t *testing.T, f *fleetOf) {
	t.Helper()
	at, err := time.Parse(time.RFC3339, f.now)
	if err != nil {
		t.Fatal(err)
	}
	store := helmStore(t, f, "local", "tenant-a")
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "app", Version: "1.0.0"}}
	plain := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\n  namespace: tenant-a\ndata:\n  mode: safe\n"
	for v, st := range map[int]release.Status{1: release.StatusDeployed, 2: release.StatusPendingUpgrade} {
		when := helmtime.Time{Time: at.Add(time.Duration(v-4) * time.Hour)}
		m := map[int]string{1: bombtest.BigScalar("tenant-a", "app-config"), 2: plain}[v]
		r := &release.Release{Name: "app", Namespace: "tenant-a", Version: v, Chart: ch, Manifest: m, Config: map[string]any{},
			Info: &release.Info{Status: st, Description: map[int]string{1: "Install complete", 2: "Preparing upgrade"}[v], FirstDeployed: when, LastDeployed: when}}
		if err := store.Create(r); err != nil {
			t.Fatal(err)
		}
	}
}

// A tenant who may write Secrets in tenant-a stores a release stuck in pending-upgrade whose
// deployed revision's manifest is an alias bomb (a 1 MiB value aliased 900 times). scan names
// that Secret and reads it from its labels; fix --apply refuses the rollback to it with the
// manifest's reason and writes nothing.
func TestFixRefusesAnAliasBombRelease(t *testing.T) {
	t.Parallel()
	f := liveFleet(t)
	cfg := f.envs["local"].Config
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bombRelease(t, f)

	scan, scanErr, _ := runCtx(ctx, t, "", append([]string{"scan"}, f.args()...)...)
	want := "Helm release Secret tenant-a/sh.helm.release.v1.app.v1: release manifest not read: with its YAML aliases expanded it holds 902 MiB"
	if !strings.Contains(strings.Join(strings.Fields(scan+scanErr), " "), want) {
		t.Errorf("scan does not say %q:\n%s%s", want, scan, scanErr)
	}
	before := everything(t, cfg)
	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code := runCtx(ctx, t, "", append([]string{"fix"}, f.args("--apply", "--yes", "--max-risk", "high", "--backup-dir", dir)...)...)
	t.Logf("fix --apply:\n%s%s", out, errOut)
	if code == 0 || !strings.Contains(strings.Join(strings.Fields(out+errOut), " "), "Helm release tenant-a/app revision 1: manifest not read: with its YAML aliases expanded it holds 902 MiB") {
		t.Errorf("exit %d: the rollback is not refused with the manifest's reason", code)
	}
	if got := changed(before, everything(t, cfg)); len(got) > 0 {
		t.Errorf("fix wrote %v", got)
	}
}
