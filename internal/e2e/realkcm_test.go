package e2e

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/remediate/execute"
	"github.com/unstick-dev/unstick/internal/testbed"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// The storage migration's first choice, verified by the real migrator: on the test bed,
// kube-controller-manager v1.37 runs its storage version migrator (GA in v1.37, on by default).
// fix plans the StorageVersionMigration by name, creates it, and the real controller rewrites
// every object in the storage version, marks it Succeeded and — what the test bed showed —
// sets the CRD's status.storedVersions to the storage version itself (with a CRD condition
// StorageMigrating=False, reason MigrationSucceeded). It finishes once its garbage collector's
// informer has passed the migration's resourceVersion, which on a resource nobody writes
// takes the API server's next watch bookmark: about a minute and a half here. unstick writes no object
// itself, and its trim step finds nothing left to write (the CRD's moved resourceVersion is
// not taken for a conflict). restore removes the migration object unstick created and leaves
// storedVersions as the migrator set them (unstick did not write them).
func TestFixStorageMigrationByTheRealMigrator(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	bed := testbed.Start(t, testbed.Options{Name: "local"})
	f := &fleetOf{kubeconfig: bed.Kubeconfig, envs: map[string]*testenv.Env{"local": bed.Env}, now: now}
	ctx := context.Background()
	const n = 60
	v2, stored, rvBefore := widgets(t, f, n)
	// kube-controller-manager refreshes its discovery every 30 seconds. Right after the CRD
	// change it may still map widgets to v1, which is no longer served, and its migrator then
	// fails the migration ("does not support discovery operations"; unstick deletes it and
	// writes the objects back itself). In the field the CRD changed long before: wait until the
	// controller manager's garbage collector deletes a ConfigMap owned by a v2 Widget, which
	// it does only once its discovery knows widgets in v2.
	gcSeesWidgets(t, bed, v2)
	plan := planOf(t, f, "--only", "crd/")
	const svmName = "unstick-widgets-example-unstick-dev"
	var migrate remediate.Step
	for _, s := range plan.Steps() {
		if s.Action == remediate.MigrateStorage {
			migrate = s
		}
	}
	if len(migrate.Creates) != 1 || migrate.Creates[0].Kind != "StorageVersionMigration" || migrate.Creates[0].Name != svmName {
		t.Fatalf("the migration step names %+v as what it may create, want StorageVersionMigration %s", migrate.Creates, svmName)
	}

	dir := filepath.Join(t.TempDir(), "backup")
	start := time.Now()
	out, errOut, code := runCtx(ctx, t, "", append([]string{"fix"}, f.args("--only", "crd/", "--apply", "--yes", "--max-risk", "high", "--backup-dir", dir, "--verify-timeout", "4m")...)...)
	t.Logf("fix --apply (%s, exit %d):\n%s%s", time.Since(start).Round(time.Millisecond), code, out, errOut)
	if code != 0 {
		t.Fatalf("fix --apply exit %d\n%s", code, bed.Logs("kube-controller-manager"))
	}
	if !strings.Contains(out, "StorageVersionMigration "+svmName+" succeeded") || strings.Contains(out, "] migrated: ") {
		t.Errorf("the migration was not left to kube-controller-manager's migrator")
	}
	for k, rv := range resourceVersions(t, v2) {
		if rv == rvBefore[k] {
			t.Errorf("%s not rewritten by the migrator (resourceVersion %s unchanged)", k, rv)
		}
	}
	if s := stored(); !reflect.DeepEqual(s, []string{"v2"}) {
		t.Errorf("storedVersions %v, want [v2]", s)
	}
	if !strings.Contains(out, "already holds only the storage version") {
		t.Errorf("the trim step did not find storedVersions set by the migrator")
	}
	entries, err := execute.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Phase == execute.PhaseProgress {
			t.Errorf("unstick wrote objects back itself: %s", e.Message)
		}
		for _, w := range e.Writes {
			if w.Kind != "StorageVersionMigration" || e.Step != migrate.ID || w.Name != svmName || w.Op != "create" {
				t.Errorf("step %s wrote %s %s %s; the only write must be the creation of StorageVersionMigration %s its plan named", e.Step, w.Op, w.Kind, w.Name, svmName)
			}
		}
	}
	dyn, err := dynamic.NewForConfig(bed.Config)
	if err != nil {
		t.Fatal(err)
	}
	svms := dyn.Resource(schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: "v1", Resource: "storageversionmigrations"})
	svm, err := svms.Get(ctx, svmName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the StorageVersionMigration the controller completed: %v", err)
	}
	conds, _, _ := unstructured.NestedSlice(svm.Object, "status", "conditions")
	t.Logf("kube-controller-manager's conditions on %s: %s", svmName, mustJSON(conds))

	rOut, rErr, code := runCtx(ctx, t, "", "restore", dir, "--kubeconfig", f.kubeconfig)
	t.Logf("restore:\n%s%s", rOut, rErr)
	if code != 0 {
		t.Fatalf("restore exit %d", code)
	}
	if s := stored(); !reflect.DeepEqual(s, []string{"v2"}) {
		t.Errorf("storedVersions %v after restore, want [v2] as the migrator left them", s)
	}
	if _, err := svms.Get(ctx, svmName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the StorageVersionMigration unstick created is still there after restore (%v)", err)
	}
}

// gcSeesWidgets waits until kube-controller-manager's garbage collector acts on a Widget owner,
// which proves its discovery includes widgets v2.
func gcSeesWidgets(t *testing.T, bed *testbed.Bed, v2 dynamic.ResourceInterface) {
	t.Helper()
	ctx := context.Background()
	probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.unstick.dev/v2", "kind": "Widget",
		"metadata": map[string]any{"name": "gc-probe"}, "spec": map[string]any{"size": int64(0), "color": "none"}}}
	owner, err := v2.Create(ctx, probe, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gc-probe", Namespace: owner.GetNamespace(),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.unstick.dev/v2", Kind: "Widget", Name: owner.GetName(), UID: owner.GetUID()}}}}
	if _, err := bed.Client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := v2.Delete(ctx, owner.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, err := bed.Client.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-controller-manager's garbage collector never removed ConfigMap %s/%s owned by a deleted Widget\n%s", cm.Namespace, cm.Name, bed.Logs("kube-controller-manager"))
		}
		time.Sleep(500 * time.Millisecond)
	}
}
