package check

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// aimSnapshot is a management cluster "rancher" (context admin@rancher) holding the Fleet
// Cluster fleet-default/c-m-1 and the agent's Bundle, and its downstream cluster "edge"
// (recorded context edge-admin) with a pod of the fleet-agent Deployment.
func aimSnapshot(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	b := snapshot.NewBuilder()
	b.DeclareCluster(snapshot.ClusterInfo{Name: "rancher", Role: snapshot.Management, Context: "admin@rancher"})
	b.DeclareCluster(snapshot.ClusterInfo{Name: "edge", Role: snapshot.Downstream, Context: "edge-admin", FleetCluster: "fleet-default/c-m-1"})
	add := func(cluster, doc string) {
		var h snapshot.Header
		if err := json.Unmarshal([]byte(doc), &h); err != nil {
			t.Fatal(err)
		}
		if err := b.AddJSON(cluster, "test", &h, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	add("rancher", `{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"Cluster","metadata":{"name":"c-m-1","namespace":"fleet-default"},"spec":{"kubeConfigSecret":"c-m-1-kubeconfig","kubeConfigSecretNamespace":"fleet-default","redeployAgentGeneration":4}}`)
	add("rancher", `{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"Bundle","metadata":{"name":"fleet-agent-c-m-1","namespace":"fleet-default"},"spec":{"forceSyncGeneration":7}}`)
	add("rancher", `{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"Bundle","metadata":{"name":"app-web","namespace":"fleet-default","labels":{"fleet.cattle.io/repo-name":"apps"}},"spec":{}}`)
	add("edge", `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"fleet-agent-7d9c5","namespace":"cattle-fleet-system","ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"fleet-agent","uid":"d1","controller":true}]},"spec":{"selector":{}}}`)
	add("edge", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fleet-agent-7d9c5-x","namespace":"cattle-fleet-system","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"fleet-agent-7d9c5","uid":"r1","controller":true}]},"spec":{"containers":[{"name":"fleet-agent","image":"rancher/fleet-agent:v0.16.0"}]}}`)
	return b.Build()
}

// Commands go to the cluster that holds what they touch, filled from the snapshot: the
// Fleet Cluster and Bundle on the management cluster with their next generations, the pod's
// container and Deployment downstream.
func TestPersonaliseAimsAndFillsFromSnapshot(t *testing.T) {
	s := aimSnapshot(t)
	f := finding.Finding{
		ID: "pod/unschedulable-taints", Cluster: "edge",
		Object: finding.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "cattle-fleet-system", Name: "fleet-agent-7d9c5-x"},
		Vars:   map[string]string{"key": "dedicated", "bundle": "fleet-agent-c-m-1"},
		Remediation: []finding.Step{{Rung: "realign", Commands: []string{
			`kubectl -n <fleet-namespace> patch clusters.fleet.cattle.io <cluster> --type merge -p '{"spec":{"agentTolerations":[{"key":"<key>","operator":"Exists","effect":"NoSchedule"}]}}'`,
			`kubectl -n <fleet-namespace> patch clusters.fleet.cattle.io <cluster> --type merge -p '{"spec":{"redeployAgentGeneration":<n+1>}}'`,
			`kubectl -n <fleet-namespace> patch bundles.fleet.cattle.io <bundle> --type merge -p '{"spec":{"forceSyncGeneration":<n+1>}}'`,
			`kubectl -n <fleet-namespace> patch gitrepos.fleet.cattle.io <gitrepo> --type merge -p '{"spec":{"forceSyncGeneration":<n+1>}}'`,
			`kubectl -n <namespace> logs <pod> -c <container> --previous | tail`,
			`kubectl -n <namespace> rollout restart deployment/<deployment>`,
			`kubectl get <plural>.<group> -A -o json | kubectl replace -f -`,
			`helm -n <namespace> history <release>`,
		}}},
	}
	personalise(indexSnapshot(s), &f)
	want := []string{
		`kubectl --context admin@rancher -n fleet-default patch clusters.fleet.cattle.io c-m-1 --type merge -p '{"spec":{"agentTolerations":[{"key":"dedicated","operator":"Exists","effect":"NoSchedule"}]}}'`,
		`kubectl --context admin@rancher -n fleet-default patch clusters.fleet.cattle.io c-m-1 --type merge -p '{"spec":{"redeployAgentGeneration":5}}'`,
		`kubectl --context admin@rancher -n fleet-default patch bundles.fleet.cattle.io fleet-agent-c-m-1 --type merge -p '{"spec":{"forceSyncGeneration":8}}'`,
		`kubectl --context edge-admin -n cattle-fleet-system logs fleet-agent-7d9c5-x -c fleet-agent --previous | tail`,
		`kubectl --context edge-admin -n cattle-fleet-system rollout restart deployment/fleet-agent`,
		`kubectl --context edge-admin get <plural>.<group> -A -o json | kubectl --context edge-admin replace -f -`,
		`helm --kube-context edge-admin -n cattle-fleet-system history <release>`,
	}
	got := f.Remediation[0].Commands
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	notes := strings.Join(f.Remediation[0].Notes, "\n")
	for _, w := range []string{"bundle fleet-agent-c-m-1 was not created from a GitRepo", "<plural>:", "<group>:", "<release>:"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
}

// A bundle from a GitRepo names it; a cluster the input knows nothing of is aimed at by its
// name, and the step says so.
func TestAimEdgeCases(t *testing.T) {
	s := aimSnapshot(t)
	f := finding.Finding{ID: "fleet/bundle-not-ready", Cluster: "rancher", Affects: "ghost",
		Vars: map[string]string{"bundle": "app-web", "fleet-namespace": "fleet-default"},
		Remediation: []finding.Step{{Commands: []string{
			`kubectl -n <fleet-namespace> patch gitrepos.fleet.cattle.io <gitrepo> --type merge -p '{"spec":{"forceSyncGeneration":<n+1>}}'`,
			`kubectl -n cattle-fleet-system get pods`,
		}}}}
	personalise(indexSnapshot(s), &f)
	got := f.Remediation[0].Commands
	if got[0] != `kubectl --context admin@rancher -n fleet-default patch gitrepos.fleet.cattle.io apps --type merge -p '{"spec":{"forceSyncGeneration":<n+1>}}'` {
		t.Errorf("gitrepo command: %s", got[0])
	}
	if got[1] != `kubectl --context ghost -n cattle-fleet-system get pods` {
		t.Errorf("unknown cluster: %s", got[1])
	}
	notes := strings.Join(f.Remediation[0].Notes, "\n")
	if !strings.Contains(notes, "context ghost is the cluster's name") || !strings.Contains(notes, "<n+1>:") {
		t.Errorf("notes: %s", notes)
	}
}

// A Fleet Cluster whose agent registered itself (no spec.kubeConfigSecret) gets no
// redeployAgentGeneration command: the Fleet controller ignores the field for it, so the
// command would change nothing. The step says why instead.
func TestPersonaliseLeavesOutRedeployForSelfRegisteredAgent(t *testing.T) {
	b := snapshot.NewBuilder()
	b.DeclareCluster(snapshot.ClusterInfo{Name: "rancher", Role: snapshot.Management, Context: "admin@rancher"})
	b.DeclareCluster(snapshot.ClusterInfo{Name: "edge", Role: snapshot.Downstream, Context: "edge-admin", FleetCluster: "fleet-default/edge"})
	doc := `{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"Cluster","metadata":{"name":"edge","namespace":"fleet-default"},"spec":{"clientID":"x1","redeployAgentGeneration":2}}`
	var h snapshot.Header
	if err := json.Unmarshal([]byte(doc), &h); err != nil {
		t.Fatal(err)
	}
	if err := b.AddJSON("rancher", "test", &h, []byte(doc)); err != nil {
		t.Fatal(err)
	}
	f := finding.Finding{
		ID: "agent/config-invalid", Cluster: "edge",
		Object: finding.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "cattle-fleet-system", Name: "fleet-agent"},
		Remediation: []finding.Step{{Rung: "realign", Commands: []string{
			`kubectl -n cattle-fleet-system get configmap fleet-controller -o yaml`,
			`kubectl -n <fleet-namespace> patch clusters.fleet.cattle.io <cluster> --type merge -p '{"spec":{"redeployAgentGeneration":<n+1>}}'`,
		}}},
	}
	personalise(indexSnapshot(b.Build()), &f)
	got := strings.Join(f.Remediation[0].Commands, "\n")
	if strings.Contains(got, "redeployAgentGeneration") || !strings.Contains(got, "get configmap fleet-controller") {
		t.Errorf("commands:\n%s\nwant the configmap read and no redeploy bump", got)
	}
	if notes := strings.Join(f.Remediation[0].Notes, "\n"); !strings.Contains(notes, "Fleet Cluster fleet-default/edge was registered by its agent") {
		t.Errorf("notes do not say why the redeploy is left out:\n%s", notes)
	}
}

// A restart of a Deployment the cluster does not have (the agent's Deployment deleted) is left
// out with a note, once the cluster's Deployments were read; with the Deployment there, or
// with no Deployment read at all, the command stays.
func TestPersonaliseLeavesOutRestartOfMissingDeployment(t *testing.T) {
	build := func(docs ...string) *snapshot.Snapshot {
		b := snapshot.NewBuilder()
		b.DeclareCluster(snapshot.ClusterInfo{Name: "edge", Role: snapshot.Downstream, Context: "edge-admin"})
		for _, doc := range docs {
			var h snapshot.Header
			if err := json.Unmarshal([]byte(doc), &h); err != nil {
				t.Fatal(err)
			}
			if err := b.AddJSON("edge", "test", &h, []byte(doc)); err != nil {
				t.Fatal(err)
			}
		}
		return b.Build()
	}
	coredns := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"rke2-coredns-rke2-coredns","namespace":"kube-system"},"spec":{"selector":{}}}`
	agent := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"fleet-agent","namespace":"cattle-fleet-system"},"spec":{"selector":{}}}`
	restart := func(s *snapshot.Snapshot) finding.Step {
		f := finding.Finding{
			ID: "fleet/agent-heartbeat-stale", Cluster: "edge",
			Object: finding.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "cattle-fleet-system"},
			Remediation: []finding.Step{{Rung: "restart", Commands: []string{
				`kubectl -n cattle-fleet-system rollout restart deployment/fleet-agent`,
			}}},
		}
		personalise(indexSnapshot(s), &f)
		return f.Remediation[0]
	}
	if st := restart(build(coredns)); len(st.Commands) != 0 || !strings.Contains(strings.Join(st.Notes, "\n"), "cluster edge has no Deployment cattle-fleet-system/fleet-agent") {
		t.Errorf("agent Deployment missing: commands %q, notes %q", st.Commands, st.Notes)
	}
	for name, s := range map[string]*snapshot.Snapshot{"present": build(coredns, agent), "not read": build()} {
		if st := restart(s); len(st.Commands) != 1 || !strings.Contains(st.Commands[0], "--context edge-admin -n cattle-fleet-system rollout restart deployment/fleet-agent") {
			t.Errorf("%s: commands %q, want the restart aimed at edge-admin", name, st.Commands)
		}
	}
}
