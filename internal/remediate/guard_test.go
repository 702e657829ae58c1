package remediate

import (
	"errors"
	"testing"
)

func TestGuard(t *testing.T) {
	helm := map[string]string{"owner": "helm", "name": "x", "status": "deployed", "version": "1"}
	for _, tc := range []struct {
		name   string
		o      Object
		typ    string
		labels map[string]string
		refuse bool
	}{
		{"ClusterRegistration", Object{APIVersion: "fleet.cattle.io/v1alpha1", Kind: "ClusterRegistration", Namespace: "fleet-default", Name: "r"}, "", nil, true},
		{"ClusterRegistrationToken", Object{APIVersion: "fleet.cattle.io/v1alpha1", Kind: "ClusterRegistrationToken", Namespace: "fleet-default", Name: "t"}, "", nil, true},
		{"CRD", Object{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "bundles.fleet.cattle.io"}, "", nil, true},
		{"Namespace", Object{APIVersion: "v1", Kind: "Namespace", Name: "cattle-fleet-system"}, "", nil, true},
		{"registration Secret", Object{APIVersion: "v1", Kind: "Secret", Namespace: "cattle-fleet-system", Name: "fleet-agent-bootstrap"}, "Opaque", nil, true},
		{"agent credentials", Object{APIVersion: "v1", Kind: "Secret", Namespace: "cattle-fleet-system", Name: "fleet-agent"}, "kubernetes.io/service-account-token", nil, true},
		{"Helm-named Secret of another type", Object{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "sh.helm.release.v1.x.v1"}, "Opaque", helm, true},
		{"Helm-named Secret not owned by helm", Object{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "sh.helm.release.v1.x.v1"}, HelmSecretType, map[string]string{"owner": "someone"}, true},
		{"Helm release storage", Object{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "sh.helm.release.v1.x.v1"}, HelmSecretType, helm, false},
		{"Helm revision to create", Object{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "sh.helm.release.v1.x.v2", Create: true}, "", nil, false},
		{"a namespaced kind named like a Namespace", Object{APIVersion: "example.com/v1", Kind: "Namespace", Name: "n"}, "", nil, false},
		{"Deployment", Object{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "cattle-fleet-system", Name: "fleet-agent"}, "", nil, false},
		{"Node", Object{APIVersion: "v1", Kind: "Node", Name: "n"}, "", nil, false},
	} {
		err := Guard(tc.o, tc.typ, tc.labels)
		var ge *GuardError
		if got := errors.As(err, &ge); got != tc.refuse {
			t.Errorf("%s: refused=%v (%v), want %v", tc.name, got, err, tc.refuse)
		}
	}
}

func TestParseImageChoice(t *testing.T) {
	for in, want := range map[string]ImageChoice{
		"upgrade=rancher/kubectl:v1.30.3":                               {Stage: "upgrade", Ref: "rancher/kubectl:v1.30.3"},
		"k3s-agent:prepare=rancher/k3s-upgrade:v1.30.3-k3s1":            {Plan: "k3s-agent", Stage: "prepare", Ref: "rancher/k3s-upgrade:v1.30.3-k3s1"},
		"system-upgrade/k3s-agent:upgrade=reg:5000/a/b@sha256:" + zeros: {Namespace: "system-upgrade", Plan: "k3s-agent", Stage: "upgrade", Ref: "reg:5000/a/b@sha256:" + zeros},
	} {
		got, err := ParseImageChoice(in)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"rancher/kubectl:v1", "drain=rancher/kubectl:v1.30.3", "upgrade=", "upgrade=UPPER/case"} {
		if _, err := ParseImageChoice(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

const zeros = "0000000000000000000000000000000000000000000000000000000000000000"
