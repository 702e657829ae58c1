package main

import "time"

// quotedScenarios are errors one controller quotes from another — a BundleDeployment or a
// Helm release quoting the API server or Helm — each with its look-alike. The strings are
// those the cited upstream code writes.
func quotedScenarios() []*scenario {
	var out []*scenario
	out = append(out, quotedMissingKind()...)
	out = append(out, quotedWebhookService()...)
	out = append(out, quotedApplyConflict()...)
	out = append(out, quotedInstallRefused()...)
	out = append(out, quotedImmutable()...)
	return out
}

const shopCluster = "shop-eu-1"

// shopScenario is a management cluster and the collected downstream cluster shop-eu-1 with
// one BundleDeployment, shop-app.
func shopScenario(dir, src, desc string, bd bundleDeployment, fc fleetCluster) *scenario {
	s := newScenario(dir, src, desc)
	s.cluster("local", "management")
	s.cluster(shopCluster, "downstream")
	s.management([]fleetCluster{fc}, []bundleDeployment{bd})
	s.add(s.in("local", "fleet-default/bundles.fleet.cattle.io.yaml"), obj{
		"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
		"metadata": meta("Bundle", "shop-app", "fleet-default", ago(90*24*time.Hour), nil),
		"spec": obj{"defaultNamespace": "shop", "forceSyncGeneration": 2, "helm": obj{"chart": "shop-app"},
			"targets": []obj{{"clusterName": clusterID(shopCluster)}}},
	})
	s.add(s.in(shopCluster, "nodes.yaml"), nodes(shopCluster, "v1.33.5+rke2r1", 3, ago(300*24*time.Hour))...)
	return s
}

func shopBD(fc fleetCluster, state, msg string, at time.Time) bundleDeployment {
	return bundleDeployment{cluster: fc, bundle: "shop-app", bundleNS: "fleet-default", defaultNS: "shop", created: ago(90 * 24 * time.Hour), state: state, msg: msg, at: at, gen: 9}
}

func shopFleetCluster(readyMsg string, at time.Time) fleetCluster {
	fc := downstream(clusterID(shopCluster), shopCluster, ago(time.Minute))
	if readyMsg != "" {
		fc.readyMsg, fc.readyAt, fc.state = readyMsg, at, "ErrApplied"
	}
	return fc
}

// A Helm 4 apply in Fleet names a kind no CRD serves on the cluster (helm.sh/helm/v4
// pkg/kube/client.go, without Helm 3's "unable to build kubernetes objects" prefix).
func quotedMissingKind() []*scenario {
	const src = "helm.sh/helm/v4 pkg/kube/client.go; k8s.io/apimachinery pkg/api/meta/errors.go NoKindMatchError"
	msg := "resource mapping not found for name: \"shop-api\" namespace: \"shop\" from \"\": no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\"\nensure CRDs are installed first"
	var out []*scenario
	for _, positive := range []bool{true, false} {
		at := ago(95 * time.Minute)
		fc := shopFleetCluster("ErrApplied(1) [Bundle shop-app: "+msg+"]", at)
		crds := []obj{crd("certificates.cert-manager.io", "cert-manager.io", "certificates", "Certificate", []obj{crdVersion("v1", true, true)}, []string{"v1"})}
		var s *scenario
		if positive {
			s = shopScenario("crd/quoted-missing-kind-positive", src, `
The shop-app bundle has failed to apply on shop-eu-1 for 1h35m: its ServiceMonitor is of a kind
no CRD serves there (the Prometheus operator's CRDs are not installed). The missing CRD,
named with its kind and group, is the root cause; the bundle is its symptom.`, shopBD(fc, "errApplied", msg, at), fc)
			s.expect.RootCauses = []string{"crd/missing"}
			s.expect.Findings = []string{"fleet/bundle-err-applied"}
		} else {
			at = ago(3 * time.Minute)
			fc = shopFleetCluster("ErrApplied(1) [Bundle shop-app: "+msg+"]", at)
			s = shopScenario("crd/quoted-missing-kind-lookalike", src, `
Look-alike: the same message, written before the monitoring CRDs were installed a minute ago;
the cluster serves ServiceMonitor now. The bundle's failure is still reported until Fleet's
next retry, but no CRD is missing.`, shopBD(fc, "errApplied", msg, at), fc)
			crds = append(crds, crd("servicemonitors.monitoring.coreos.com", "monitoring.coreos.com", "servicemonitors", "ServiceMonitor", []obj{crdVersion("v1", true, true)}, []string{"v1"}))
			s.expect.Forbid = []string{"crd/missing"}
		}
		s.add(s.in(shopCluster, "customresourcedefinitions.yaml"), crds...)
		out = append(out, s)
	}
	return out
}

// The API server cannot call an admission webhook whose Service is gone (k8s.io/apiserver
// pkg/util/webhook ErrCallingWebhook, pkg/util/proxy ResolveEndpoint), and Fleet quotes it.
func quotedWebhookService() []*scenario {
	const src = "k8s.io/apiserver pkg/util/webhook/error.go ErrCallingWebhook; pkg/util/proxy/proxy.go ResolveEndpoint"
	msg := `Internal error occurred: failed calling webhook "validate.nginx.ingress.kubernetes.io": failed to call webhook: Post "https://ingress-nginx-controller-admission.ingress-nginx.svc:443/networking/v1/ingresses?timeout=10s": service "ingress-nginx-controller-admission" not found`
	var out []*scenario
	for _, positive := range []bool{true, false} {
		var s *scenario
		if positive {
			at := ago(70 * time.Minute)
			fc := shopFleetCluster("ErrApplied(1) [Bundle shop-app: "+msg+"]", at)
			s = shopScenario("workload/quoted-webhook-service-missing-positive", src, `
ingress-nginx was uninstalled from shop-eu-1 but its ValidatingWebhookConfiguration stayed: every
Ingress create or update calls a webhook whose Service no longer exists, so the shop-app bundle
has failed for 1h10m. The webhook (its configuration and missing Service named) is the root cause.`, shopBD(fc, "errApplied", msg, at), fc)
			s.expect.RootCauses = []string{"workload/webhook-unavailable"}
			s.expect.Findings = []string{"fleet/bundle-err-applied"}
			s.expect.Forbid = []string{"workload/admission-denied"}
		} else {
			fc := shopFleetCluster("", time.Time{})
			s = shopScenario("workload/quoted-webhook-service-missing-healthy", src, `
Look-alike: the same webhook configuration, its Service in place, the bundle Ready.`, shopBD(fc, "ready", "", ago(5*24*time.Hour)), fc)
			s.expect.Forbid = []string{"workload/webhook-unavailable", "workload/admission-denied", "fleet/bundle-err-applied"}
			s.expect.MaxSeverity = "info"
		}
		// The collector does not read webhook configurations (source allowlist), so the
		// finding names the webhook and its Service from the message.
		out = append(out, s)
	}
	return out
}

// Helm 4's server-side apply meets fields another manager holds (helm.sh/helm/v4
// pkg/kube/client.go patchResourceServerSide; k8s.io/apimachinery managedfields
// NewConflictError). Each retry writes a failed revision; the BundleDeployment keeps
// Deployed=True from the old revision and waits.
func quotedApplyConflict() []*scenario {
	const src = "helm.sh/helm/v4 pkg/kube/client.go patchResourceServerSide; k8s.io/apimachinery pkg/util/managedfields/internal/conflict.go"
	desc := "Upgrade \"shop-app\" failed: conflict occurred while applying object shop/shop-config /v1, Kind=ConfigMap: Apply failed with 2 conflicts: conflicts with \"kubectl-create\" using v1:\n- .data.color\n- .data.size"
	first := ago(90 * 24 * time.Hour)
	var out []*scenario
	for _, positive := range []bool{true, false} {
		hist := []helmRelease{{name: "shop-app", ns: "shop", rev: 6, status: "deployed", description: "Upgrade complete", chart: "shop-app", version: "2.3.0", app: "2.3.0", first: first, last: ago(20 * 24 * time.Hour)}}
		var s *scenario
		if positive {
			at := ago(150 * time.Minute)
			fc := shopFleetCluster("WaitApplied(1) [Bundle shop-app]", at)
			fc.state = "WaitApplied"
			s = shopScenario("helm/quoted-ssa-conflict-positive", src, `
shop-app 2.4.0 cannot be applied on shop-eu-1 for 2h30m: someone created the ConfigMap
shop-config with kubectl, and Helm 4's server-side apply refuses the fields kubectl-create holds.
Each retry writes a failed revision; the BundleDeployment stays WaitApplied on the old one. The
failed release names the ConfigMap, its field manager and the fields, and the ways out.`, shopBD(fc, "waitApplied", "", ago(20*24*time.Hour)), fc)
			hist = append(hist, helmRelease{name: "shop-app", ns: "shop", rev: 7, status: "failed", description: desc, chart: "shop-app", version: "2.4.0", app: "2.4.0", first: first, last: ago(4 * time.Minute)})
			s.expect.RootCauses = []string{"helm/release-failed"}
			s.expect.Findings = []string{"fleet/bundle-wait-applied-stuck"}
		} else {
			fc := shopFleetCluster("", time.Time{})
			s = shopScenario("helm/quoted-ssa-conflict-healthy", src, `
Look-alike after the ConfigMap was adopted: revision 7 failed on the conflict, revision 8 deployed.`, shopBD(fc, "ready", "", ago(10*time.Minute)), fc)
			hist[0].status = "superseded"
			hist = append(hist,
				helmRelease{name: "shop-app", ns: "shop", rev: 7, status: "failed", description: desc, chart: "shop-app", version: "2.4.0", app: "2.4.0", first: first, last: ago(40 * time.Minute)},
				helmRelease{name: "shop-app", ns: "shop", rev: 8, status: "deployed", description: "Upgrade complete", chart: "shop-app", version: "2.4.0", app: "2.4.0", first: first, last: ago(10 * time.Minute)})
			s.expect.Forbid = []string{"helm/release-failed", "fleet/bundle-wait-applied-stuck"}
			s.expect.MaxSeverity = "info"
		}
		s.releases(shopCluster, hist)
		out = append(out, s)
	}
	return out
}

// Helm refuses to install over an object without the release's ownership metadata (helm
// pkg/action/install.go, validate.go); Fleet leaves the BundleDeployment Installed=False and
// does not retry.
func quotedInstallRefused() []*scenario {
	const src = "helm/helm pkg/action/install.go, pkg/action/validate.go checkOwnership"
	msg := `rendered manifests contain a resource that already exists. Unable to continue with install: ConfigMap "shop-config" in namespace "shop" exists and cannot be imported into the current release: invalid ownership metadata; label validation error: missing key "app.kubernetes.io/managed-by": must be set to "Helm"; annotation validation error: missing key "meta.helm.sh/release-name": must be set to "shop-app"; annotation validation error: missing key "meta.helm.sh/release-namespace": must be set to "shop"`
	var out []*scenario
	for _, positive := range []bool{true, false} {
		var s *scenario
		if positive {
			at := ago(6 * time.Minute)
			fc := shopFleetCluster("NotReady(1) [Bundle shop-app: "+msg+"]", at)
			fc.state = "NotReady"
			s = shopScenario("fleet/quoted-install-refused-positive", src, `
The first install of shop-app on shop-eu-1 was refused 6 minutes ago: the ConfigMap shop-config
exists without Helm's ownership metadata. Fleet will not retry, so this is an error now, not
a bundle waiting to become ready; the step adopts or deletes the ConfigMap, then force-syncs.`, shopBD(fc, "installRefused", msg, at), fc)
			s.expect.RootCauses = []string{"fleet/bundle-err-applied"}
			s.expect.Forbid = []string{"fleet/bundle-not-ready"}
		} else {
			fc := shopFleetCluster("", time.Time{})
			s = shopScenario("fleet/quoted-install-refused-healthy", src, `
Look-alike after the ConfigMap was adopted: the bundle installed and is Ready.`, shopBD(fc, "ready", "", ago(3*time.Minute)), fc)
			s.releases(shopCluster, []helmRelease{{name: "shop-app", ns: "shop", rev: 1, status: "deployed", description: "Install complete", chart: "shop-app", version: "2.4.0", app: "2.4.0", first: ago(3 * time.Minute), last: ago(3 * time.Minute)}})
			s.expect.Forbid = []string{"fleet/bundle-err-applied", "fleet/bundle-not-ready"}
			s.expect.MaxSeverity = "info"
		}
		out = append(out, s)
	}
	return out
}

// An upgrade changes a Deployment's selector (k8s.io/kubernetes pkg/apis/apps/validation
// ValidateDeploymentUpdate: "field is immutable"); a resync replays it.
func quotedImmutable() []*scenario {
	const src = "k8s.io/kubernetes pkg/apis/apps/validation ValidateDeploymentUpdate; helm/helm pkg/kube/client.go (\"cannot patch %q with kind %s\")"
	msg := `Upgrade "shop-app" failed: cannot patch "shop-api" with kind Deployment: Deployment.apps "shop-api" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app.kubernetes.io/component":"api", "app.kubernetes.io/name":"shop-api"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable`
	var out []*scenario
	for _, positive := range []bool{true, false} {
		var s *scenario
		if positive {
			at := ago(40 * time.Minute)
			fc := shopFleetCluster("ErrApplied(1) [Bundle shop-app: "+msg+"]", at)
			s = shopScenario("fleet/quoted-immutable-field-positive", src, `
shop-app 3.0.0 adds a label to the shop-api Deployment's selector: the API server refuses the
change ("field is immutable") and every retry replays it. The step deletes and re-creates the
Deployment (or sets helm.force), not a resync.`, shopBD(fc, "errApplied", msg, at), fc)
			s.expect.RootCauses = []string{"fleet/bundle-err-applied"}
		} else {
			fc := shopFleetCluster("", time.Time{})
			s = shopScenario("fleet/quoted-immutable-field-healthy", src, `
Look-alike after the Deployment was re-created: the bundle is Ready.`, shopBD(fc, "ready", "", ago(20*time.Minute)), fc)
			s.expect.Forbid = []string{"fleet/bundle-err-applied"}
			s.expect.MaxSeverity = "info"
		}
		s.add(s.in(shopCluster, "shop/deployments.yaml"), deployment("shop", "shop-api", ago(90*24*time.Hour), "nginx:1.27.3", nil, 4, true, "NewReplicaSetAvailable", ago(20*24*time.Hour)))
		out = append(out, s)
	}
	return out
}
