package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/remediate/execute"
)

// The bundle of fleet/bundle-err-applied-positive that cannot be applied: its chart needs
// the ServiceMonitor kind, which the downstream cluster does not serve.
const (
	errBundleNS = "fleet-default"
	errBundle   = "platform-ingress-nginx"
	errBDNS     = "cluster-fleet-default-c-m-8k2lq-d39d68e554a5"
)

var (
	bundlesGVR = schema.GroupVersionResource{Group: "fleet.cattle.io", Version: "v1alpha1", Resource: "bundles"}
	bdsGVR     = schema.GroupVersionResource{Group: "fleet.cattle.io", Version: "v1alpha1", Resource: "bundledeployments"}
)

// standInFleet stands in for the Fleet controller and agent on the test server: the failure
// fix must not call fixed — a controller that observes every force-sync bump and deploys the
// bundle again, and the deployment still fails — cannot be produced on demand by the real
// Fleet (it takes a chart that keeps failing only until the test says otherwise). For each
// new generation of the Bundle it does what Fleet v0.16 does: the controller records
// status.observedGeneration and gives the BundleDeployment the new deployment options and
// their deploymentID (options.DeploymentID: the manifest ID, ":", the SHA-256 of the options'
// JSON); a moment later the agent reports the deployment — failing as before (Deployed=False
// with the same message, appliedDeploymentID left at the old one), or, once heal is set,
// applied and Ready.
type standInFleet struct {
	dyn   dynamic.Interface
	heal  atomic.Bool
	bumps atomic.Int32
}

func startStandInFleet(t *testing.T, cfg *rest.Config) *standInFleet {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &standInFleet{dyn: dyn}
	// The controller's first reconcile of the replayed Bundle (created anew, at generation 1)
	// before fix reads it: status.observedGeneration follows the generation.
	if err := s.reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := s.reconcile(ctx); err != nil && ctx.Err() == nil {
				t.Logf("stand-in Fleet: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return s
}

// reconcile handles a new generation of the Bundle, if there is one, and deploys it again
// when its forceSyncGeneration moved.
func (s *standInFleet) reconcile(ctx context.Context) error {
	bundles := s.dyn.Resource(bundlesGVR).Namespace(errBundleNS)
	b, err := bundles.Get(ctx, errBundle, metav1.GetOptions{})
	if err != nil {
		return err
	}
	observed, _, _ := unstructured.NestedInt64(b.Object, "status", "observedGeneration")
	if b.GetGeneration() == observed {
		return nil
	}
	force, _, _ := unstructured.NestedInt64(b.Object, "spec", "forceSyncGeneration")
	if err := unstructured.SetNestedField(b.Object, b.GetGeneration(), "status", "observedGeneration"); err != nil {
		return err
	}
	if s.heal.Load() {
		setReady(b, "readyClusters", "1/1")
	}
	if _, err := bundles.UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		return err
	}
	bd, err := s.dyn.Resource(bdsGVR).Namespace(errBDNS).Get(ctx, errBundle, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if deployed, _, _ := unstructured.NestedInt64(bd.Object, "spec", "options", "forceSyncGeneration"); deployed == force {
		return nil // nothing new to deploy
	}
	s.bumps.Add(1)
	time.Sleep(time.Second) // the agent's apply comes after the controller's reconcile
	return s.deploy(ctx, force)
}

// deploy gives the BundleDeployment the options with the new forceSyncGeneration and their
// deploymentID, and reports the agent's outcome.
func (s *standInFleet) deploy(ctx context.Context, force int64) error {
	bds := s.dyn.Resource(bdsGVR).Namespace(errBDNS)
	bd, err := bds.Get(ctx, errBundle, metav1.GetOptions{})
	if err != nil {
		return err
	}
	opts := func() map[string]any {
		return map[string]any{"defaultNamespace": "ingress-nginx", "forceSyncGeneration": force}
	}
	raw, _ := json.Marshal(opts())
	sum := sha256.Sum256(append(raw, '\n'))
	manifest, _, _ := unstructured.NestedString(bd.Object, "spec", "deploymentID")
	manifest, _, _ = strings.Cut(manifest, ":")
	id := manifest + ":" + hex.EncodeToString(sum[:])
	for _, f := range [][]string{{"spec", "options"}, {"spec", "stagedOptions"}} {
		if err := unstructured.SetNestedField(bd.Object, opts(), f...); err != nil {
			return err
		}
	}
	_ = unstructured.SetNestedField(bd.Object, id, "spec", "deploymentID")
	_ = unstructured.SetNestedField(bd.Object, id, "spec", "stagedDeploymentID")
	if bd, err = bds.Update(ctx, bd, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if s.heal.Load() {
		_ = unstructured.SetNestedField(bd.Object, id, "status", "appliedDeploymentID")
		setReady(bd, "deployed", "True")
	}
	// Failing as before: the agent's conditions and message are what they were (wrangler
	// moves lastUpdateTime only when a condition changes), appliedDeploymentID the old one.
	_, err = bds.UpdateStatus(ctx, bd, metav1.UpdateOptions{})
	return err
}

// setReady makes every condition True with no message, and the display say so.
func setReady(u *unstructured.Unstructured, displayKey, displayValue string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	now := time.Now().UTC().Format(time.RFC3339)
	for i, c := range conds {
		cm, _ := c.(map[string]any)
		conds[i] = map[string]any{"type": cm["type"], "status": "True", "lastUpdateTime": now}
	}
	_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
	_ = unstructured.SetNestedField(u.Object, map[string]any{displayKey: displayValue}, "status", "display")
	if u.GetKind() == "Bundle" {
		_ = unstructured.SetNestedField(u.Object, map[string]any{"desiredReady": int64(1), "ready": int64(1)}, "status", "summary")
		_ = unstructured.SetNestedField(u.Object, int64(0), "status", "unavailable")
	}
}

// A resync of a bundle whose failure lies elsewhere: the controller observes the bump and
// deploys again, and the deployment fails as before. fix must say unverified, quote what the
// BundleDeployment still shows and exit 3 — never "fixed". Once the deployment succeeds at
// the new deploymentID, the same fix says fixed and exits 0.
func TestFixVerifiesTheOutcome(t *testing.T) {
	t.Parallel()
	f := replay(t, scenario("fleet/bundle-err-applied-positive"))
	if len(f.envs) != 1 {
		t.Fatalf("%d clusters replayed, want one", len(f.envs))
	}
	var cfg *rest.Config
	for _, env := range f.envs {
		cfg = env.Config
	}
	fleet := startStandInFleet(t, cfg)
	fix := func(dir string) (string, int) {
		t.Helper()
		args := f.args("--only", "fleet/bundle-err-applied", "--apply", "--yes", "--backup-dir", dir, "--verify-timeout", "6s")
		out, errOut, code := runCtx(context.Background(), t, "", append([]string{"fix"}, args...)...)
		t.Logf("fix --apply:\n%s%s", out, errOut)
		return out, code
	}

	t.Run("still failing", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "backup")
		out, code := fix(dir)
		if code != 3 {
			t.Errorf("exit %d, want 3: the deployment still fails", code)
		}
		if fleet.bumps.Load() == 0 {
			t.Fatal("the stand-in never saw a bump: the test proves nothing")
		}
		for _, want := range []string{
			"Done: 0 incidents fixed, 1 unverified, 0 failed, 0 open.",
			"unverified: fleet/bundle-err-applied on ",
			"BundleDeployment " + errBDNS + "/" + errBundle,
			`Deployed=False: unable to build kubernetes objects from release manifest: resource mapping not found for name: "ingress-nginx-controller"`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the output does not say %q", want)
			}
		}
		if strings.Contains(out, "] verified:") {
			t.Errorf("a step verified although the deployment still fails")
		}
		checkOutcome(t, dir, execute.IncidentUnverified)
	})

	t.Run("deployed", func(t *testing.T) {
		fleet.heal.Store(true)
		dir := filepath.Join(t.TempDir(), "backup")
		out, code := fix(dir)
		if code != 0 {
			t.Errorf("exit %d, want 0: the bundle is Ready at its new deploymentID", code)
		}
		if !strings.Contains(out, "Done: 1 incident fixed, 0 unverified, 0 failed, 0 open.") {
			t.Errorf("the output does not count the incident fixed")
		}
		checkOutcome(t, dir, execute.IncidentFixed)
	})
}

// checkOutcome holds the journal of dir to one incident outcome line saying want.
func checkOutcome(t *testing.T, dir, want string) {
	t.Helper()
	entries, err := execute.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if e.Phase == execute.PhaseOutcome {
			got = append(got, e.Outcome)
		}
	}
	if len(got) != 1 || got[0] != want {
		t.Errorf("journal outcome lines %v, want [%s]", got, want)
	}
}
