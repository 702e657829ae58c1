package serve

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// serve counts the objects a storage migration rewrites as the scan does: prod-ap-1's
// widgets.apps.example.com still has v1alpha1 in status.storedVersions, and 5 Widgets.
func TestServeCountsCRDObjectsToMigrate(t *testing.T) {
	ctx := t.Context()
	env := testenv.Start(t, testenv.WithContextName("prod-ap-1"))
	if _, err := testenv.Load(ctx, env.Config, example, testenv.LoadOptions{Cluster: "prod-ap-1"}); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "widgets"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(env.Config)
	widgets := dyn.Resource(schema.GroupVersionResource{Group: "apps.example.com", Version: "v1beta1", Resource: "widgets"}).Namespace("widgets")
	for i := range 5 {
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps.example.com/v1beta1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w-%d", i)}}}
		if _, err := widgets.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Targets: []source.Target{{Name: "prod-ap-1", Server: env.Config.Host, Config: env.Config}},
		Registry: prometheus.NewRegistry(), Catalog: cat, Thresholds: check.NewThresholds(cat), Clock: func() time.Time { return exampleNow },
		Debounce: 50 * time.Millisecond, Interval: time.Second, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(rctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	var last string
	for range 50 {
		rep := srv.Report()
		if rep == nil {
			waitEvaluations(srv, 1)
			continue
		}
		for _, f := range rep.Findings {
			if f.ID != "crd/version-not-served" {
				continue
			}
			last = f.Summary
			if strings.Contains(f.Summary, "migrate its 5 objects to v1beta1") && len(f.Evidence) > 0 && strings.Contains(f.Evidence[0].Text, "; 5 objects to migrate") {
				return
			}
		}
		waitEvaluations(srv, 1)
	}
	t.Errorf("no crd/version-not-served finding counting the 5 Widgets; last summary %q", last)
}
