package source

import (
	"fmt"

	"k8s.io/client-go/discovery"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// Kube is the typed clients unstick uses, over one HTTP client: the core, apps and
// authorization groups and discovery; everything else is read through the dynamic and
// metadata clients. client-go's full clientset would link the client of every API group
// into the binary, and a long-running serve keeps most of its code resident.
type Kube struct {
	Core      corev1client.CoreV1Interface
	Apps      appsv1client.AppsV1Interface
	Authz     authorizationv1client.AuthorizationV1Interface
	Discovery discovery.DiscoveryInterface
}

// NewKube makes the typed clients for one cluster.
func NewKube(cfg *rest.Config) (*Kube, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	k := &Kube{}
	if k.Core, err = corev1client.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if k.Apps, err = appsv1client.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if k.Authz, err = authorizationv1client.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if k.Discovery, err = discovery.NewDiscoveryClientForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	return k, nil
}
