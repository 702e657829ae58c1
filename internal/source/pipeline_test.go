package source

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/fleet"
)

// A fleet dump carries the pipeline before the BundleDeployment: its GitRepos and HelmOps are
// read as Fleet's types (spec, status.commit, polling, conditions), its Contents keep the size
// of their payload, and what must not leave the loader does not (a password in the repo URL,
// a CA bundle, the per-resource status, a HelmOp's values).
func TestLoadFleetDumpPipeline(t *testing.T) {
	file := filepath.Join(t.TempDir(), "fleet-dump.tgz")
	packTarGz(t, file, treeEntries(fleetDumpFiles(t), ""))
	s := load(t, file)
	if len(s.Errors) != 0 || len(s.Clusters) != 1 {
		t.Fatalf("want one cluster and no errors:\n%s", describeSnap(s))
	}
	c := s.Clusters[0]
	if len(c.GitRepos) != 1 {
		t.Fatalf("want the dump's GitRepo, got %d:\n%s", len(c.GitRepos), describeSnap(s))
	}
	g := c.GitRepos[0]
	if g.Status.Commit != "b7c91f0d2e4a6c8e0f1a3b5c7d9e1f2a4b6c8d0e" || g.Status.WebhookCommit != g.Status.Commit || g.Status.LastPollingTime.IsZero() {
		t.Errorf("GitRepo status read without its commit, webhook commit or polling time: %+v", g.Status)
	}
	if got := fleet.PollingInterval(g); got.String() != "1m0s" {
		t.Errorf("polling interval %s, want the spec's 1m", got)
	}
	if c := fleet.Condition(g.Status.Conditions, "GitPolling"); c == nil || !strings.Contains(c.Message, "authentication required") {
		t.Errorf("GitPolling condition lost: %+v", g.Status.Conditions)
	}
	if strings.Contains(g.Spec.Repo, "ghp_") || !strings.Contains(g.Spec.Repo, "git.example.com/platform/fleet-platform.git") {
		t.Errorf("repo URL kept its password or lost its address: %q", g.Spec.Repo)
	}
	if len(g.Spec.CABundle) != 0 || len(g.Status.Resources) != 0 {
		t.Errorf("CA bundle or per-resource status kept: %d bytes, %d resources", len(g.Spec.CABundle), len(g.Status.Resources))
	}
	if got := c.Source("GitRepo", "fleet-local", "platform"); !strings.HasPrefix(got, "gitrepos_fleet-local_platform") {
		t.Errorf("GitRepo cited as %q, want its dump file", got)
	}
	if len(c.HelmOps) != 1 || c.HelmOps[0].Spec.Helm == nil || c.HelmOps[0].Spec.Helm.Chart != "kube-prometheus-stack" {
		t.Fatalf("want the dump's HelmOp with its chart, got %+v", c.HelmOps)
	}
	if c.HelmOps[0].Spec.Helm.Values != nil {
		t.Errorf("HelmOp values kept: %v", c.HelmOps[0].Spec.Helm.Values)
	}
	name := "s-7a63d487574ad23c96b054a068430112eb16e07fd0d839d1fdbb6e8a18417"
	if !c.HasContent(name) || c.ContentBytes[name] != 139 {
		t.Errorf("Content %s: read=%t, %d bytes, want its 139-byte payload's size", name, c.HasContent(name), c.ContentBytes[name])
	}
}
