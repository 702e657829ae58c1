package testenv

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Each fault reaches a client-go client as the real failure would, the proxy passes requests
// through untouched while off, and a reset-after write is made on the real server.
func TestFaultProxy(t *testing.T) {
	env := Start(t)
	p := StartFaultProxy(t, env.Config, 1)
	cs, err := kubernetes.NewForConfig(p.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// One raw GET with client-go's own retries off, so the first answer is what we see.
	get := func(ctx context.Context) error {
		return cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces").MaxRetries(0).Do(ctx).Error()
	}
	only := func(r Rule) {
		r.Rate = 1
		p.SetRules(r)
		p.ResetCounts()
		p.On()
	}

	p.SetRules(Rule{Fault: InternalError, Rate: 1})
	if err := get(ctx); err != nil || p.Injected() != 0 || p.Seen() != 1 {
		t.Fatalf("off: err %v, %d injected, %d seen; want the server's answer", err, p.Injected(), p.Seen())
	}

	only(Rule{Fault: Throttle, RetryAfter: 2 * time.Second})
	err = get(ctx)
	if d, ok := apierrors.SuggestsClientDelay(err); !apierrors.IsTooManyRequests(err) || !ok || d != 2 {
		t.Errorf("throttle: %v (retry after %d, %v); want 429 with Retry-After 2", err, d, ok)
	}
	only(Rule{Fault: InternalError})
	if err := get(ctx); !apierrors.IsInternalError(err) {
		t.Errorf("500: %v", err)
	}
	only(Rule{Fault: Unavailable})
	if err := get(ctx); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("503: %v", err)
	}
	only(Rule{Fault: Reset})
	if err := get(ctx); err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Errorf("reset: %v", err)
	}
	only(Rule{Fault: Truncate})
	if err := get(ctx); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncate: %v", err)
	}
	only(Rule{Fault: Stall, Stall: 300 * time.Millisecond})
	start := time.Now()
	if err := get(ctx); err != nil || time.Since(start) < 300*time.Millisecond {
		t.Errorf("stall 300ms: %v after %s", err, time.Since(start))
	}
	only(Rule{Fault: Stall})
	sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	err = get(sctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stall until the client gives up: %v", err)
	}

	// A write whose answer is lost was made all the same; the rule matched the POST only.
	only(Rule{Fault: ResetAfter, Methods: []string{"POST"}})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lost-answer", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err == nil {
		t.Errorf("reset-after: the create got an answer")
	}
	if got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "lost-answer", metav1.GetOptions{}); err != nil || got.Data["k"] != "v" {
		t.Errorf("reset-after: the create was not made on the server: %v", err)
	}
	if c := p.Counts(); c[ResetAfter] != 1 || len(p.Log()) != 1 || p.Log()[0].Method != "POST" {
		t.Errorf("counts %v, log %v; want one reset-after of the POST", c, p.Log())
	}
	p.Off()
}
