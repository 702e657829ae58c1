package e2e

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The charts of the bundle-chain stage.
const (
	grafanaDashboards = `apiVersion: v1
kind: ConfigMap
metadata:
  name: shop-grafana-dashboards
  labels: {grafana_dashboard: "1"}
data:
  shop-overview.json: '{"title": "Shop overview", "panels": []}'
`
	// payments renders rollingUpdate: null, as charts do whose values leave the block empty
	// (the API server defaults it: maxSurge and maxUnavailable 25%), and empty lists the API
	// server drops (env: [], imagePullSecrets: []).
	paymentsDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: payments
spec:
  replicas: 1
  strategy:
    type: RollingUpdate
    rollingUpdate: null
  selector:
    matchLabels: {app: payments}
  template:
    metadata:
      labels: {app: payments}
    spec:
      imagePullSecrets: []
      containers:
      - name: payments
        image: ghcr.io/example/payments:3.2.0
        env: []
`
)

// produceBundleChains makes a dependsOn chain on a failing bundle and two Modified bundles
// (one changed by another writer, one rendering a field the API defaults), waits for the
// agent's messages and collects fleet-bundle-chains.
func produceBundleChains(t *testing.T, r *realFleet) {
	t.Helper()
	settings := failBundle{name: "shop-settings", ns: "shop-settings", version: "1.0.0", templates: map[string]string{"configmap.yaml": shopConfig}}
	payments := failBundle{name: "payments", ns: "payments", version: "3.2.0", templates: map[string]string{"deployment.yaml": paymentsDeployment}}
	for _, b := range []failBundle{settings, payments} {
		r.updateBundle(t, b.bundle())
	}
	waitUntil(t, "shop-settings deployed", 4*time.Minute, func() bool { return bdReady(r.bdOf(t, settings.name)) }, r.logs)
	// Someone changes the deployed ConfigMap by hand (kubectl edit's field manager).
	cm, err := r.down.Client.CoreV1().ConfigMaps(settings.ns).Get(t.Context(), "shop-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["LOG_LEVEL"] = "debug"
	if _, err := r.down.Client.CoreV1().ConfigMaps(settings.ns).Update(t.Context(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	monitoring := failBundle{name: "monitoring", ns: "shop-monitoring", version: "0.9.0", templates: map[string]string{"servicemonitor.yaml": serviceMonitor}, wantMessage: "no matches for kind"}
	dashboards := failBundle{name: "shop-dashboards", ns: "grafana", version: "1.2.0", templates: map[string]string{"dashboards.yaml": grafanaDashboards}, wantMessage: "dependent bundle(s) are not ready"}
	r.updateBundle(t, monitoring.bundle())
	dep := dashboards.bundle()
	dep.Spec.DependsOn = []fleetv1.BundleRef{{Name: monitoring.name}}
	r.updateBundle(t, dep)
	settings.wantMessage = "modified"
	msgs := waitMessages(t, r, []failBundle{monitoring, dashboards, settings})
	// payments settles Ready, or Modified if the agent's diff sees the defaulted field.
	deadline := time.Now().Add(3 * time.Minute)
	for bd := r.bdOf(t, payments.name); !(bdReady(bd) || bd != nil && !bd.Status.NonModified) && time.Now().Before(deadline); bd = r.bdOf(t, payments.name) {
		time.Sleep(time.Second)
	}
	time.Sleep(20 * time.Second) // a further pass of the agent's monitor
	msgs[payments.name] = r.bundleMessages(t, payments)
	t.Logf("payments, as the agent reports it:\n%s", msgs[payments.name])
	dir := collectLive(t, r.kubeconfig, "fleet-bundle-chains")
	writeRealPipelineScenario(t, dir, pipelineScenario{
		what: "Bundles on down-1: monitoring ships a ServiceMonitor without the Prometheus operator's CRDs (no matches for kind) and shop-dashboards dependsOn it " +
			"(the agent's `dependent bundle(s) are not ready`); shop-settings' ConfigMap was changed by hand after Fleet deployed it (Modified); " +
			"payments renders `rollingUpdate: null`, `env: []` and `imagePullSecrets: []`, which the API server defaults or drops: " + defaultedVerdict(r.bdOf(t, payments.name)) + ".",
		expect: "rootCauses: [crd/missing, fleet/bundle-modified]\nfindings: [fleet/dependency-blocked]\nforbid: [fleet/bundle-not-ready]\n",
		msgs:   msgs,
		roots: []bundleRoot{
			{"crd/missing", "", []string{"ServiceMonitor", "monitoring.coreos.com"}},
			{"fleet/bundle-modified", "", []string{"shop-settings", "LOG_LEVEL"}},
		},
	})
	for _, b := range []failBundle{settings, payments, monitoring, dashboards} {
		_ = r.fleet.Client.Delete(t.Context(), b.bundle())
	}
}

// waitMessages waits until each bundle's messages contain its wantMessage (not fatal: a
// failure the controllers did not make is reported, the others still collected) and returns
// the messages.
func waitMessages(t *testing.T, r *realFleet, bundles []failBundle) map[string]string {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	msgs := map[string]string{}
	for _, b := range bundles {
		for !strings.Contains(strings.ToLower(r.bundleMessages(t, b)), strings.ToLower(b.wantMessage)) && time.Now().Before(deadline) {
			time.Sleep(time.Second)
		}
		if m := r.bundleMessages(t, b); !strings.Contains(strings.ToLower(m), strings.ToLower(b.wantMessage)) {
			t.Errorf("%s: the real controllers never reported %q:\n%s", b.name, b.wantMessage, m)
		}
	}
	time.Sleep(5 * time.Second) // the agent's status write after its last attempt
	for _, b := range bundles {
		msgs[b.name] = r.bundleMessages(t, b)
		t.Logf("%s, as the real controllers report it:\n%s", b.name, msgs[b.name])
	}
	return msgs
}

// geoIPData is a binary file's worth of incompressible bytes, base64-encoded as a chart's
// ConfigMap binaryData carries it.
func geoIPData(n int) string {
	rng := rand.New(rand.NewChaCha8([32]byte{'g', 'e', 'o'}))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return base64.StdEncoding.EncodeToString(b)
}

func geoIPConfigMap(name string, size int) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\nbinaryData:\n  GeoLite2-City.mmdb: " + geoIPData(size) + "\n"
}

// produceReleaseTooLarge tries a Bundle larger than etcd stores (refused by the API server
// before it exists), then deploys one whose chart carries a 700 KiB database: the Bundle and
// its Content fit, the Helm release that holds the chart twice does not.
func produceReleaseTooLarge(t *testing.T, r *realFleet) {
	t.Helper()
	huge := failBundle{name: "geoip-full", ns: "geoip", version: "2026.12.1", templates: map[string]string{"configmap.yaml": geoIPConfigMap("geoip-full", 1200<<10)}}.bundle()
	err := r.fleet.Client.Create(t.Context(), huge)
	refused := "(created)"
	if err != nil {
		refused = err.Error()
	}
	if len(refused) > 600 {
		refused = refused[:600] + "…"
	}
	t.Logf("a Bundle of %d KiB: %s", bundleSize(huge)>>10, refused)
	geo := failBundle{name: "geoip", ns: "geoip", version: "2026.12.1", templates: map[string]string{"configmap.yaml": geoIPConfigMap("geoip-city", 700<<10)}, wantMessage: "too"}
	r.updateBundle(t, geo.bundle())
	msgs := waitMessages(t, r, []failBundle{geo})
	dir := collectLive(t, r.kubeconfig, "fleet-bundle-release-too-large")
	writeRealPipelineScenario(t, dir, pipelineScenario{
		what: "Bundle geoip ships a 700 KiB GeoIP database in a ConfigMap's binaryData: the Bundle and its Content are stored, " +
			"the agent's Helm cannot store the release that holds the chart and its manifest (a Secret over 1 MiB).",
		// The release's size is the cause; the BundleDeployment's error is its symptom.
		expect: "rootCauses: [helm/release-too-large]\nfindings: [fleet/bundle-err-applied]\n",
		msgs:   msgs,
		extra: "Before it, a Bundle of the same chart with a 1,200 KiB database (" + fmt.Sprintf("%d KiB", bundleSize(huge)>>10) + " of resources) was refused by the API server " +
			"before it existed, so nothing of it is in the collection. The error the client got:\n\n```\n" + refused + "\n```",
	})
}

func bundleSize(b *fleetv1.Bundle) int {
	n := 0
	for _, res := range b.Spec.Resources {
		n += len(res.Content)
	}
	return n
}

// defaultedVerdict says what the agent made of a field the chart renders and the API defaults.
func defaultedVerdict(bd *fleetv1.BundleDeployment) string {
	switch {
	case bd == nil:
		return "no BundleDeployment"
	case !bd.Status.NonModified:
		return "the agent reports it Modified"
	case bdReady(bd):
		return "the agent reports it Ready, not Modified (no diff artefact from these fields)"
	}
	return "not Ready yet when collected"
}
