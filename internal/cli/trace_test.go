package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type jsonTrace struct {
	Verdict   string `json:"verdict"`
	StoppedAt string `json:"stoppedAt"`
	Commit    string `json:"commit"`
	Stages    []struct {
		Name    string `json:"stage"`
		Status  string `json:"status"`
		Stopped bool   `json:"stopped"`
	} `json:"stages"`
	Incident *struct {
		Number    int    `json:"number"`
		RootCause string `json:"rootCause"`
		Object    string `json:"object"`
		Cluster   string `json:"cluster"`
	} `json:"incident"`
}

func parseTrace(t *testing.T, out, errOut string) jsonTrace {
	t.Helper()
	var tr jsonTrace
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("trace -o json: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	return tr
}

// TestTraceNamesTheStageScanJudged follows changes through the example fleet and the pipeline
// scenarios: trace names the stage where each stopped, and its incident is scan's — the same
// number, root cause and object in scan's own report of the same input at the same time.
func TestTraceNamesTheStageScanJudged(t *testing.T) {
	scen := func(name string) string { return filepath.Join("..", "..", "testdata", "scenarios", "fleet", name) }
	real := func(name string) string { return filepath.Join("..", "..", "testdata", "scenarios", "real", name) }
	now := "2026-11-28T09:30:00Z"
	cases := []struct {
		name, from, target, stage, verdict, root string
		exit                                     int
	}{
		{"example: agent release pending", example, "bundle/fleet-default/fleet-agent-c-m-4x7kq2zt", "bundledeployment", "stopped", "helm/release-pending", 3},
		{"example: agent crashing on a missing CRD", example, "fleet-agent-c-m-9p2vdl6r", "bundledeployment", "stopped", "agent/crd-missing", 3},
		{"example: agent pod unschedulable", example, "fleet-agent-c-m-h5w8zq3n", "rollout", "stopped", "pod/unschedulable-taints", 3},
		{"example: paused CRD bundle, a risk", example, "bundle/fleet-default/platform-widgets-crd", "bundledeployment", "pending", "", 0},
		{"example: healthy agent", example, "fleet-agent-c-m-r8j2fw5m", "", "reached", "", 0},
		{"targeting works", scen("bundle-not-targeted-healthy"), "bundle/fleet-default/platform-monitoring", "", "reached", "", 0},
		{"dependents retried minutes ago", scen("dependency-blocked-healthy"), "platform-monitoring", "bundledeployment", "pending", "", 0},
		{"agent applies within the threshold", scen("agent-stalled-healthy"), "platform-cert-manager", "bundledeployment", "pending", "", 0},
		{"polling fails", scen("gitrepo-not-syncing-positive"), "gitrepo/fleet-default/platform", "commit", "stopped", "fleet/gitrepo-not-syncing", 3},
		{"quota refuses the gitjob", scen("gitrepo-not-syncing-quota-positive"), "platform", "job", "stopped", "workload/quota-exceeded", 3},
		{"commit prefix, quota", scen("gitrepo-not-syncing-quota-positive"), "--commit=b7c91f0", "job", "stopped", "workload/quota-exceeded", 3},
		{"gitjob still running", scen("gitrepo-not-syncing-healthy"), "platform", "job", "pending", "", 0},
		{"targeting error", scen("bundle-not-targeted-positive"), "bundle/fleet-default/platform-monitoring", "bundle", "stopped", "fleet/bundle-not-targeted", 3},
		{"dependency on a failed bundle", scen("dependency-blocked-positive"), "platform-monitoring", "bundledeployment", "stopped", "fleet/bundle-err-applied", 3},
		{"agent checks in, does not apply", scen("agent-stalled-positive"), "platform-cert-manager", "bundledeployment", "stopped", "fleet/agent-stalled", 3},
		{"bundle held by its finalizer", scen("bundle-not-targeted-deletion-held-positive"), "platform-monitoring", "bundle", "stopped", "fleet/bundle-not-targeted", 3},
		{"bundle being deleted minutes ago", scen("bundle-not-targeted-deletion-held-healthy"), "platform-monitoring", "bundle", "pending", "", 0},
		{"gitjob dies on etcd's size limit", scen("object-too-large-positive"), "gitrepo/fleet-default/platform", "job", "stopped", "fleet/object-too-large", 3},
		{"release record too large", filepath.Join("..", "..", "testdata", "scenarios", "helm", "release-too-large-positive"), "platform-ingress-nginx", "bundledeployment", "stopped", "helm/release-too-large", 3},
		// Made by the real gitjob controller and Fleet agent on the test bed.
		{"real: quota refuses the gitjob Job", real("fleet-gitrepo-failures"), "gitrepo/fleet-default/shop", "job", "stopped", "fleet/gitrepo-not-syncing", 3},
		{"real: repository not found", real("fleet-gitrepo-failures"), "apps-legacy", "commit", "stopped", "fleet/gitrepo-not-syncing", 3},
		{"real: dependsOn a bundle missing its CRD", real("fleet-bundle-chains"), "shop-dashboards", "bundledeployment", "stopped", "crd/missing", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			at := []string{"--now", now}
			if a := scenarioNow(t, c.from); a != nil {
				at = a
			}
			out, errOut, code := run(t, append([]string{"trace", c.target, "--from", c.from, "-o", "json"}, at...)...)
			tr := parseTrace(t, out, errOut)
			if code != c.exit || tr.Verdict != c.verdict || tr.StoppedAt != c.stage {
				t.Fatalf("exit %d, verdict %q, stopped at %q; want %d, %q, %q\n%s", code, tr.Verdict, tr.StoppedAt, c.exit, c.verdict, c.stage, out)
			}
			if c.root == "" {
				if tr.Incident != nil {
					t.Errorf("a change that did not stop carries incident %+v", tr.Incident)
				}
				return
			}
			if tr.Incident == nil || tr.Incident.RootCause != c.root {
				t.Fatalf("incident %+v, want root cause %s", tr.Incident, c.root)
			}
			sameIncidentAsScan(t, c.from, at[1], tr)
		})
	}
}

// sameIncidentAsScan checks the trace's incident is scan's incident of that number.
func sameIncidentAsScan(t *testing.T, from, now string, tr jsonTrace) {
	t.Helper()
	out, errOut, _ := run(t, "scan", "--from", from, "--now", now, "-o", "json")
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("scan -o json: %v\n%s", err, errOut)
	}
	n := tr.Incident.Number
	if n < 1 || n > len(rep.Incidents) {
		t.Fatalf("trace names incident %d; scan reports %d", n, len(rep.Incidents))
	}
	root := rep.Incidents[n-1].RootCause
	obj := root.Object.Kind + "/" + root.Object.Namespace + "/" + root.Object.Name
	if root.Object.Namespace == "" {
		obj = root.Object.Kind + "/" + root.Object.Name
	}
	if root.ID != tr.Incident.RootCause || obj != tr.Incident.Object || root.Cluster != tr.Incident.Cluster {
		t.Errorf("trace's incident %d is %s %s on %s; scan's is %s %s on %s", n, tr.Incident.RootCause, tr.Incident.Object, tr.Incident.Cluster, root.ID, obj, root.Cluster)
	}
}

// TestTraceNothingMatched: a name the input does not hold exits 4 and says so, naming the
// input and what it does hold; a commit prefix too.
func TestTraceNothingMatched(t *testing.T) {
	for _, args := range [][]string{{"gitrepo/fleet-default/no-such-repo"}, {"--commit", "deadbeef"}} {
		out, errOut, code := run(t, append(append([]string{"trace"}, args...), "--from", example)...)
		if code != ExitIncomplete || out != "" {
			t.Errorf("trace %v: exit %d, stdout %q; want 4 and nothing on stdout", args, code, out)
		}
		if !strings.Contains(errOut, "matches no GitRepo, Bundle or commit") || !strings.Contains(errOut, example) || !strings.Contains(errOut, "gitrepo/fleet-default/platform") {
			t.Errorf("trace %v: stderr does not name the target, the input and what it holds:\n%s", args, errOut)
		}
	}
}

// TestTraceUsage: a target and --commit together, or a malformed target, are usage errors.
func TestTraceUsage(t *testing.T) {
	for _, args := range [][]string{{"platform", "--commit", "b7c91f0"}, {"deployment/x/y"}, {"--commit", "xyz"}, {}} {
		_, errOut, code := run(t, append(append([]string{"trace"}, args...), "--from", example)...)
		if code != ExitUsage {
			t.Errorf("trace %v: exit %d, want 2\n%s", args, code, errOut)
		}
	}
}

// TestTraceHTMLEscapes: text read from the input — here a GitRepo's polling error — is
// escaped in the HTML page, and the table carries no escape sequence from it.
func TestTraceHTMLEscapes(t *testing.T) {
	dir := t.TempDir()
	gitrepo := `apiVersion: fleet.cattle.io/v1alpha1
kind: GitRepo
metadata: {name: platform, namespace: fleet-default, creationTimestamp: "2026-07-02T09:29:40Z"}
spec: {repo: "https://git.example.com/platform.git", branch: main}
status:
  commit: a1462e4c7539c9bb9003349f7f39da1c98b9ca7c
  conditions:
  - {type: GitPolling, status: "False", lastUpdateTime: "2026-11-28T06:02:00Z", message: "<script>alert(1)</script> \u001b]52;c;ZXZpbA==\u0007 authentication required"}
`
	if err := os.WriteFile(filepath.Join(dir, "gitrepo.yaml"), []byte(gitrepo), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "trace", "platform", "--from", dir, "--now", "2026-11-28T09:30:00Z", "-o", "html")
	if code != ExitOK && code != ExitFindings {
		t.Fatalf("exit %d, want a trace (0 or 3)\n%s", code, errOut)
	}
	if strings.Contains(out, "<script>") || !strings.Contains(out, "&lt;script&gt;") || strings.Contains(out, "\x1b") {
		t.Errorf("the polling error is not escaped in the HTML trace:\n%s", out)
	}
	table, _, _ := run(t, "trace", "platform", "--from", dir, "--now", "2026-11-28T09:30:00Z")
	if strings.Contains(table, "\x1b") || !strings.Contains(table, "▶ commit") {
		t.Errorf("the table carries an escape sequence or does not mark the commit stage:\n%s", table)
	}
}

// TestTraceBehindAStop: while the gitjob cannot run, the BundleDeployments are Ready — on the
// previous change. The trace does not call that reached, and names the cluster as Rancher
// shows it though the cluster itself was not read.
func TestTraceBehindAStop(t *testing.T) {
	from := filepath.Join("..", "..", "testdata", "scenarios", "fleet", "gitrepo-not-syncing-quota-positive")
	out, errOut, _ := run(t, "trace", "platform", "--from", from, "--now", "2026-11-28T09:30:00Z", "-o", "json")
	var tr struct {
		Stages []struct {
			Name   string `json:"stage"`
			Status string `json:"status"`
			Detail string `json:"detail"`
		} `json:"stages"`
		Clusters []struct {
			Cluster string `json:"cluster"`
		} `json:"clusters"`
	}
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, st := range tr.Stages {
		if st.Name == "bundledeployment" && (st.Status != "waiting" || !strings.Contains(st.Detail, "has not arrived")) {
			t.Errorf("BundleDeployments on the previous change read as %s: %q", st.Status, st.Detail)
		}
	}
	if len(tr.Clusters) != 2 || tr.Clusters[0].Cluster != "prod-eu-1" {
		t.Errorf("rows %+v, want two on prod-eu-1 (the Fleet Cluster's display name)", tr.Clusters)
	}
}

// TestTraceDocsShowRealOutput holds docs/trace.md to what trace prints: its table and JSON
// examples are the output of the command they show.
func TestTraceDocsShowRealOutput(t *testing.T) {
	t.Setenv("COLUMNS", "100")
	b, err := os.ReadFile("../../docs/trace.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	from := "testdata/scenarios/fleet/gitrepo-not-syncing-quota-positive"
	args := []string{"trace", "platform", "--from", "../../" + from, "--now", "2026-11-28T09:30:00Z"}
	table, _, _ := run(t, args...)
	prompt := "$ unstick trace platform --from " + from + " --now 2026-11-28T09:30:00Z\n"
	if !strings.Contains(doc, prompt+table+"$ echo $?\n3\n") {
		t.Errorf("docs/trace.md's table is not what trace prints now:\n%s", table)
	}
	js, _, _ := run(t, append(args, "-o", "json")...)
	if !strings.Contains(doc, "```json\n"+js+"```") {
		t.Errorf("docs/trace.md's JSON is not what trace prints now:\n%s", js)
	}
}

// TestTraceConnectionFlagsAsScan: trace refuses what scan refuses — connection flags with an
// offline bundle, a context the kubeconfig lacks — before reading anything.
func TestTraceConnectionFlagsAsScan(t *testing.T) {
	for _, flag := range []string{"--as=jane", "--server=https://x.example.test", "--context=a", "--rancher"} {
		_, errOut, code := run(t, "trace", "platform", "--from", example, flag)
		if code != ExitUsage || !strings.Contains(errOut, "cannot be combined") {
			t.Errorf("trace --from %s: exit %d, stderr %q", flag, code, errOut)
		}
	}
	kc, _ := fleetKubeconfig(t)
	_, errOut, code := run(t, "trace", "platform", "--kubeconfig", kc, "--context", "prod-eu-2")
	if code != ExitUsage || !strings.Contains(errOut, `"prod-eu-2"`) {
		t.Errorf("trace with an unknown context: exit %d, stderr %q", code, errOut)
	}
}

