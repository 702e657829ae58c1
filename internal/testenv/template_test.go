//go:build unix

package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// A server started from the etcd template is what a server that installed the CRDs itself
// is: the same CRDs served and established, the same bootstrap objects; and each start gets a
// copy of its own.
func TestStartFromTheTemplate(t *testing.T) {
	installed, err := start(t.Context(), t.TempDir(), []Option{withoutTemplate()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = installed.Stop() })
	a, b := Start(t), Start(t)

	key := func() string {
		apiserver, etcd, err := Binaries(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		crds, err := CRDs(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		k, err := templateKey(apiserver, etcd, crds, options{args: map[string][]string{"event-ttl": {"720h"}}})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}()
	templateMu.Lock()
	_, used := templateReady[key]
	templateMu.Unlock()
	if !used {
		t.Fatalf("Start did not use the etcd template %s", key)
	}

	want := served(t, installed)
	for name, e := range map[string]*Env{"a": a, "b": b} {
		if got := served(t, e); !slices.Equal(got, want) {
			t.Errorf("server %s from the template serves\n  %v\nwhere a server that installed the CRDs serves\n  %v", name, got, want)
		}
		if got, want := bootstrap(t, e), bootstrap(t, installed); !slices.Equal(got, want) {
			t.Errorf("server %s from the template holds\n  %v\nwhere a fresh server holds\n  %v", name, got, want)
		}
	}

	// Each is a cluster of its own: kube-system's UID, a cluster's identity, differs.
	uids := map[string]string{}
	for name, e := range map[string]*Env{"installed": installed, "a": a, "b": b} {
		ns, err := kubernetes.NewForConfigOrDie(e.Config).CoreV1().Namespaces().Get(t.Context(), "kube-system", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := uids[string(ns.UID)]; ok {
			t.Errorf("servers %s and %s have the same kube-system UID %s: one cluster to fix and restore", other, name, ns.UID)
		}
		uids[string(ns.UID)] = name
	}

	cs := kubernetes.NewForConfigOrDie(a.Config)
	if _, err := cs.CoreV1().ConfigMaps("default").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "only-in-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(b.Config).CoreV1().ConfigMaps("default").Get(t.Context(), "only-in-a", metav1.GetOptions{}); err == nil {
		t.Error("a ConfigMap created on one server from the template is on another")
	}
}

// served lists every CRD with its established condition and every resource discovery lists
// for it.
func served(t *testing.T, e *Env) []string {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(e.Config)
	list, err := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	disc := discovery.NewDiscoveryClientForConfigOrDie(e.Config)
	var out []string
	for _, u := range list.Items {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtimeConvert(u, &crd); err != nil {
			t.Fatal(err)
		}
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		out = append(out, crd.Name+" established="+strconv.FormatBool(established))
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			rl, err := disc.ServerResourcesForGroupVersion(crd.Spec.Group + "/" + v.Name)
			if err != nil {
				t.Fatalf("discovering %s/%s: %v", crd.Spec.Group, v.Name, err)
			}
			for _, r := range rl.APIResources {
				out = append(out, crd.Spec.Group+"/"+v.Name+" "+r.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// bootstrap lists what a server writes on its first start: namespaces, cluster roles and
// bindings, priority classes, the kubernetes Service.
func bootstrap(t *testing.T, e *Env) []string {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(e.Config)
	ctx := t.Context()
	var out []string
	ns, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns.Items {
		out = append(out, "namespace "+n.Name)
	}
	roles, err := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles.Items {
		out = append(out, "clusterrole "+r.Name)
	}
	bindings, err := cs.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range bindings.Items {
		out = append(out, "clusterrolebinding "+r.Name)
	}
	pcs, err := cs.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pcs.Items {
		out = append(out, "priorityclass "+p.Name)
	}
	svcs, err := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		out = append(out, "service "+s.Namespace+"/"+s.Name)
	}
	sort.Strings(out)
	return out
}

func runtimeConvert(u unstructured.Unstructured, into *apiextensionsv1.CustomResourceDefinition) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// The copy of etcd's preallocated files keeps their bytes and leaves their zeros unallocated.
func TestCopyTreeIsSparse(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	data := make([]byte, 8<<20)
	copy(data, "head")
	copy(data[5<<20:], "middle")
	copy(data[len(data)-3:], "end")
	if err := os.MkdirAll(filepath.Join(src, "member", "wal"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "member", "wal", "0.wal"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dst, "member", "wal", "0.wal")
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("the copy differs from the file")
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks*512 >= int64(len(data)) {
		t.Errorf("the copy allocates %d bytes for %d bytes of mostly zeros", st.Blocks*512, len(data))
	}
}
