package e2e

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// kindSink records which objects a live read delivered, by kind.
type kindSink struct {
	mu     sync.Mutex
	byKind map[string][]string // kind → namespace/name
	errs   []string
}

func (s *kindSink) DeclareCluster(snapshot.ClusterInfo) {}
func (s *kindSink) AddJSON(_, _ string, h *snapshot.Header, _ []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byKind[h.Kind] = append(s.byKind[h.Kind], h.Metadata.Namespace+"/"+h.Metadata.Name)
	return nil
}
func (s *kindSink) AddLog(string, string, string, string, bool, string, []string) {}
func (s *kindSink) MarkCRDsCollected(string)                                      {}
func (s *kindSink) Error(e finding.ScanError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, e.Message)
}

// A cluster with more watched namespaces than source.NamespaceListLimit (a management
// cluster has one per downstream cluster) has its watched-namespace kinds listed across all
// namespaces, keeping only the watched ones' objects; a reader allowed to list them only
// namespace by namespace (RoleBindings) still gets them all.
func TestLiveManyWatchedNamespaces(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	env := testenv.Start(t, testenv.WithRBAC())
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	var want []string
	n := source.NamespaceListLimit + 4
	for i := range n {
		want = append(want, fmt.Sprintf("cluster-fleet-default-c-%02d/cm", i))
	}
	all := append([]string{"other/cm"}, want...)
	for _, ref := range all {
		ns, name, _ := strings.Cut(ref, "/")
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// A reader that may list namespaces, and everything else only inside the watched ones.
	mustCreate := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ns-lister"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list"}}}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{})
	mustCreate(err)
	subj := []rbacv1.Subject{{Kind: "User", Name: "ns-scoped"}}
	_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ns-lister"},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "ns-lister"}, Subjects: subj}, metav1.CreateOptions{})
	mustCreate(err)
	for _, ref := range append([]string{"kube-system/"}, want...) {
		ns, _, _ := strings.Cut(ref, "/")
		_, err = kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "reader"}, Subjects: subj}, metav1.CreateOptions{})
		mustCreate(err)
	}
	scoped, err := env.AddUser("ns-scoped")
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		cfg  *rest.Config
	}{{"administrator", env.Config}, {"namespace-scoped reader", scoped}} {
		t.Run(c.name, func(t *testing.T) {
			sink := &kindSink{byKind: map[string][]string{}}
			l := &source.Live{Targets: []source.Target{{Name: "t", Server: c.cfg.Host, Config: c.cfg}}}
			if err := l.Read(ctx, sink); err != nil {
				t.Fatal(err)
			}
			var got []string // the server's own ConfigMaps in kube-system left out
			for _, ref := range sink.byKind["ConfigMap"] {
				if strings.HasSuffix(ref, "/cm") {
					got = append(got, ref)
				}
			}
			sort.Strings(got)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("ConfigMaps read: %v\nwant those of the watched namespaces: %v", got, want)
			}
			for _, e := range sink.errs {
				if strings.Contains(e, "configmaps") {
					t.Errorf("scan error about configmaps: %s", e)
				}
			}
		})
	}
}
