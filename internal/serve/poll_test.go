package serve

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// Through Rancher every watch is a request held open by Rancher's proxy for as long as serve
// runs, so serve watches only the kinds whose changes are failures to report at once and
// lists the others from the watch cache every PollInterval. Against a real API server holding
// prod-eu-1: the watches opened are of watched kinds only (and fewer than half the kinds
// read), the polled lists ask the watch cache, a ConfigMap created in a watched namespace
// is seen at the next poll, and a Helm release Secret at once, by its watch.
func TestServeWatchesStateKindsAndPollsTheRest(t *testing.T) {
	env := testenv.Start(t, testenv.WithContextName("prod-eu-1"))
	if _, err := testenv.Load(t.Context(), env.Config, example, testenv.LoadOptions{Cluster: "prod-eu-1"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	watches, cachedLists := map[string]bool{}, 0
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			q := req.URL.Query()
			mu.Lock()
			if q.Get("watch") == "true" {
				watches[resourceOf(req.URL.Path)] = true
			} else if q.Get("resourceVersion") == "0" {
				cachedLists++
			}
			mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	changed := make(chan struct{}, 1)
	w, err := newClusterWatch(source.Target{Name: "prod-eu-1", Server: cfg.Host, Config: cfg}, 0, 300*time.Millisecond,
		logReading{limit: 1, lines: 10}, func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.start(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the caches to sync", w.synced)

	t.Run("only the watched kinds are watched, the others read from the watch cache", func(t *testing.T) {
		waitUntil(t, "the watches to open", func() bool { mu.Lock(); defer mu.Unlock(); return len(watches) > 0 })
		mu.Lock()
		defer mu.Unlock()
		t.Logf("watched: %v, of %d kinds read", watches, len(w.polls))
		for res := range watches {
			if !watchedKindName(res) {
				t.Errorf("watched %s, a kind serve should poll", res)
			}
		}
		if len(w.polls) == 0 || cachedLists < len(w.polls) {
			t.Errorf("%d polled kinds, %d lists from the watch cache", len(w.polls), cachedLists)
		}
		if kinds := len(w.informers) + 1; len(watches) > kinds/2 { // + the namespaces
			t.Errorf("%d kinds watched of %d read: %v", len(watches), kinds, watches)
		}
	})

	kube := kubernetes.NewForConfigOrDie(env.Config)
	t.Run("a polled kind is seen at the next poll", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rancher-provisioning-probe", Namespace: "cattle-system"}, Data: map[string]string{"a": "b"}}
		if _, err := kube.CoreV1().ConfigMaps("cattle-system").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the ConfigMap in the polled cache", func() bool { return cached(w, "ConfigMap", "cattle-system", cm.Name) })
	})
	t.Run("a watched kind is seen at once", func(t *testing.T) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.probe.v1", Namespace: "cattle-system", Labels: map[string]string{"owner": "helm", "status": "pending-upgrade", "name": "probe", "version": "1"}}, Type: "helm.sh/release.v1"}
		if _, err := kube.CoreV1().Secrets("cattle-system").Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		waitUntil(t, "the release Secret in the watched cache", func() bool { return cached(w, "Secret", "cattle-system", s.Name) })
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("the watched Secret took %s", took)
		}
	})
}

// resourceOf is "group/resource" of an API path: /api/v1/namespaces/x/pods → "/pods".
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	group := ""
	if parts[0] == "apis" && len(parts) > 1 {
		group, parts = parts[1], parts[3:]
	} else if len(parts) > 2 {
		parts = parts[2:]
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	return group + "/" + parts[0]
}

func watchedKindName(groupResource string) bool {
	for _, r := range source.Resources() {
		if r.GVR.Group+"/"+r.GVR.Resource == groupResource {
			return watchedKind(r.GVR)
		}
	}
	return false
}

// cached reports whether the cluster's caches hold the named object of kind.
func cached(w *clusterWatch, kind, ns, name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, x := range w.informers {
		if x.res.Kind != kind {
			continue
		}
		for _, obj := range x.inf.GetStore().List() {
			if c, ok := obj.(*cachedObject); ok && c.namespace == ns && c.name == name && c.kept() {
				return true
			}
		}
	}
	return false
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("waited 30 s for %s", what)
		}
	}
}
