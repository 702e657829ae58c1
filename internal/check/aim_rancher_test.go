package check

import (
	"testing"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A cluster read through Rancher's proxy with the credentials of a context for Rancher has
// no context of its own: its commands carry the Rancher context and the cluster's proxy URL
// (helm: --kube-apiserver), so they reach that cluster and not the one the context points at.
func TestAimThroughRancherCarriesTheServer(t *testing.T) {
	a := aimer{subject: contextOf(&snapshot.Cluster{Name: "prod-eu-1", Context: "rancher",
		ContextServer: "https://rancher.example.com/k8s/clusters/c-m-4x7kq2zt"}, "prod-eu-1")}
	cases := map[string]string{
		"kubectl -n cattle-fleet-system rollout restart deployment/fleet-agent": "kubectl --context rancher --server https://rancher.example.com/k8s/clusters/c-m-4x7kq2zt -n cattle-fleet-system rollout restart deployment/fleet-agent",
		"helm -n cattle-fleet-system history fleet-agent-c-m-4x7kq2zt":          "helm --kube-context rancher --kube-apiserver https://rancher.example.com/k8s/clusters/c-m-4x7kq2zt -n cattle-fleet-system history fleet-agent-c-m-4x7kq2zt",
		"kubectl get crd -o json | kubectl replace -f -":                        "kubectl --context rancher --server https://rancher.example.com/k8s/clusters/c-m-4x7kq2zt get crd -o json | kubectl --context rancher --server https://rancher.example.com/k8s/clusters/c-m-4x7kq2zt replace -f -",
	}
	checkAim(t, a, cases)
}

// A live read given --kubeconfig aims its commands at that file too, quoted for the shell
// when its path needs it: a shell reading another kubeconfig would otherwise send them to
// that file's context of the same name.
func TestAimNamesTheKubeconfigGiven(t *testing.T) {
	a := aimer{subject: contextOf(&snapshot.Cluster{Name: "prod-eu-1", Context: "prod-eu-1",
		Kubeconfig: "/home/ops/fleet configs/eu.yaml"}, "prod-eu-1")}
	cases := map[string]string{
		"kubectl -n cattle-fleet-system rollout restart deployment/fleet-agent": "kubectl --kubeconfig '/home/ops/fleet configs/eu.yaml' --context prod-eu-1 -n cattle-fleet-system rollout restart deployment/fleet-agent",
		"helm -n cattle-fleet-system history fleet-agent-local":                 "helm --kubeconfig '/home/ops/fleet configs/eu.yaml' --kube-context prod-eu-1 -n cattle-fleet-system history fleet-agent-local",
	}
	checkAim(t, a, cases)
}

// checkAim aims each command of cases (command → aimed command) with a.
func checkAim(t *testing.T, a aimer, cases map[string]string) {
	t.Helper()
	for in, want := range cases {
		if got, _, err := a.aim(in, false); err != nil || got != want {
			t.Errorf("aim(%q):\n got %s (%v)\nwant %s", in, got, err, want)
		}
	}
}
