package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// `kubectl cluster-info dump` is what operators most often attach to a report: typed Lists
// whose items carry no apiVersion or kind (empty ones with items null), and every container's
// log in DIR/<namespace>/<pod>/logs.txt between marker lines. The example's prod-us-1 is
// replayed into a real API server, real kubectl dumps it as JSON and as YAML, into a directory
// and to its standard output (one file, the log blocks between the documents), and each dump
// scans to the agent's missing CRD as the root cause, read from the dumped log, with nothing
// skipped as not an object, and says that no Helm release was judged (a dump holds no Secrets).
func scanReadsAClusterInfoDump(t *testing.T, env *testenv.Env) {
	ctx := t.Context()
	kubectl, err := testenv.Kubectl(ctx)
	if err != nil {
		t.Fatalf("building kubectl: %v", err)
	}
	logs := filepath.Join(t.TempDir(), "logs")
	if _, err := testenv.CopyLogs(example, "prod-us-1", logs); err != nil {
		t.Fatal(err)
	}
	// The agent crash-loops: its container is waiting, and the kubelet answers a plain
	// `kubectl logs` with the last terminated instance's log, which the bundle holds as the
	// previous log. The log stand-in serves it for the plain request too.
	podLogs := filepath.Join(logs, "cattle-fleet-system", "fleet-agent-w8dt2q2xf2-gb5tv")
	prev, err := os.ReadFile(filepath.Join(podLogs, "fleet-agent.previous.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(podLogs, "fleet-agent.log"), prev, 0o600); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	addProxiedContext(t, kc, "prod-us-1", env.Config, logs)
	kc.CurrentContext = "prod-us-1"
	kubeconfig := writeKubeconfig(t, kc)

	var keys [][]string
	// A directory (--output-directory), or one file of documents with the log blocks
	// between them (what the dump prints to its standard output).
	for _, format := range []string{"json", "yaml", "json-stdout", "yaml-stdout"} {
		output, toStdout := strings.CutSuffix(format, "-stdout")
		from := filepath.Join(t.TempDir(), "prod-us-1")
		args := []string{"--kubeconfig", kubeconfig, "cluster-info", "dump", "--all-namespaces", "--output", output}
		if !toStdout {
			args = append(args, "--output-directory", from)
		}
		dumped, err := exec.CommandContext(ctx, kubectl, args...).Output()
		if err != nil {
			t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
		}
		if toStdout {
			from += "." + output
			if err := os.WriteFile(from, dumped, 0o600); err != nil {
				t.Fatal(err)
			}
		} else if _, err := os.Stat(filepath.Join(from, "cattle-fleet-system", "fleet-agent-w8dt2q2xf2-gb5tv", "logs.txt")); err != nil {
			t.Fatalf("the dump holds no log of the agent pod: %v", err)
		}
		out, errOut, code := run(t, "scan", "--from", from, "--now", now, "-o", "json")
		if code != 3 {
			t.Fatalf("scan of the %s dump exited %d, want 3 (a critical incident); stderr: %s\n%s", format, code, errOut, out)
		}
		r := parse(t, out, errOut)
		roots := []string{}
		for _, inc := range r.Incidents {
			roots = append(roots, inc.RootCause.ID)
		}
		if !slices.Contains(roots, "agent/crd-missing") {
			t.Errorf("%s dump: root causes %v, want agent/crd-missing read from the dumped log", format, roots)
		}
		var rep struct {
			Skipped  []struct{ File, Reason string } `json:"skipped"`
			Warnings []string                        `json:"warnings"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		// A dump holds no Secrets: the report says the Helm releases were not judged.
		if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "no Helm release was judged") }) {
			t.Errorf("%s dump: warnings %q, want one saying no Helm release was judged", format, rep.Warnings)
		}
		for _, s := range rep.Skipped {
			if strings.Contains(s.Reason, "not a Kubernetes object") || strings.Contains(s.Reason, "not read") {
				t.Errorf("%s dump: %s skipped: %s", format, s.File, s.Reason)
			}
		}
		if len(r.Errors) > 0 {
			t.Errorf("%s dump: errors %v", format, r.Errors)
		}
		keys = append(keys, r.keys())
	}
	for i := 1; i < len(keys); i++ {
		if d := diff(keys[0], keys[i]); d != "" {
			t.Errorf("dump %d scans differently from the first:\n%s", i, d)
		}
	}
}
