package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// Every command scan prints on the example fleet can be pasted as it is: aimed at its
// cluster with --context (helm: --kube-context), filled with what the bundle holds, and
// accepted by that cluster's API server. The example is replayed into one API server per
// cluster, behind a kubeconfig whose contexts are named after the clusters (the bundle
// records no context, so the report aims at the cluster names and says so).

// unknowable are the placeholders whose value no bundle holds: the fleet-crd chart's
// reference depends on the Helm repositories configured where the command is run.
var unknowable = []string{"<fleet-crd-chart>"}

var (
	placeholderRe = regexp.MustCompile(`<[A-Za-z][A-Za-z0-9+.\-]*>`)
	tableCmdRe    = regexp.MustCompile(`(?m)^\s+\$ (.*)$`)
	htmlCmdRe     = regexp.MustCompile(`(?s)<pre><code>(.*?)</code></pre>`)
)

type printedCommand struct {
	cmd   string
	notes []string // the step's notes (JSON only)
}

func exampleCommandsArePasteable(t *testing.T, kubeconfig, kubectl string) {
	outs := map[string]string{}
	for _, format := range []string{"table", "markdown", "html", "json"} {
		out, errOut, code := run(t, "scan", "--from", example, "--now", now, "-o", format)
		if code != 3 {
			t.Fatalf("scan -o %s exited %d, want 3 (critical incidents); stderr: %s", format, code, errOut)
		}
		outs[format] = out
	}
	byFormat := map[string][]printedCommand{
		"table":    commandsOf(tableCmdRe.FindAllStringSubmatch(outs["table"], -1), func(s string) string { return s }),
		"html":     commandsOf(htmlCmdRe.FindAllStringSubmatch(outs["html"], -1), html.UnescapeString),
		"markdown": markdownCommands(outs["markdown"]),
		"json":     jsonCommands(t, outs["json"]),
	}
	all := map[string]printedCommand{}
	for format, cmds := range byFormat {
		if len(cmds) == 0 {
			t.Errorf("%s: no command printed", format)
		}
		for _, c := range cmds {
			checkAimedAndFilled(t, format, c)
			if p, ok := all[c.cmd]; !ok || len(p.notes) < len(c.notes) {
				all[c.cmd] = c
			}
		}
	}
	// The table shows each incident's next step; the other formats whole ladders.
	for _, format := range []string{"table", "markdown", "html"} {
		for _, c := range byFormat[format] {
			if !slices.ContainsFunc(byFormat["json"], func(j printedCommand) bool { return j.cmd == c.cmd }) {
				t.Errorf("%s prints a command the JSON report lacks: %s", format, c.cmd)
			}
		}
	}
	if t.Failed() {
		return
	}

	var cmds []string
	for c := range all {
		cmds = append(cmds, c)
	}
	sort.Strings(cmds)
	for _, c := range cmds {
		t.Run(c, func(t *testing.T) { pasteCommand(t, kubeconfig, kubeconfig, kubectl, c) })
	}
	if t.Failed() {
		return
	}
	pasteLiveCommands(t, kubeconfig, kubectl)
}

// pasteLiveCommands scans the replayed example live through the kubeconfig named with
// --kubeconfig, and pastes every command printed into a shell whose $KUBECONFIG is another
// file with contexts of the same names, pointing nowhere: each must name the file it was
// read through, or it would act on whatever cluster that other file calls by the same name.
func pasteLiveCommands(t *testing.T, kubeconfig, kubectl string) {
	decoy := clientcmdapi.NewConfig()
	for _, n := range exampleClusters {
		decoy.Clusters[n] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
		decoy.AuthInfos[n] = &clientcmdapi.AuthInfo{}
		decoy.Contexts[n] = &clientcmdapi.Context{Cluster: n, AuthInfo: n}
	}
	decoyFile := filepath.Join(t.TempDir(), "decoy-kubeconfig")
	if err := clientcmd.WriteToFile(*decoy, decoyFile); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "scan", "--kubeconfig", kubeconfig, "--all-contexts", "--now", now, "-o", "json")
	if code != 3 {
		t.Fatalf("live scan exited %d, want 3 (critical incidents); stderr: %s", code, errOut)
	}
	cmds, clusters := jsonReportCommands(t, out)
	for _, c := range clusters {
		if c.Kubeconfig != kubeconfig || c.Context != c.Name {
			t.Errorf("cluster %s: commands aimed at context %q of %q, want context %s of %s", c.Name, c.Context, c.Kubeconfig, c.Name, kubeconfig)
		}
	}
	if len(cmds) == 0 {
		t.Fatal("the live scan printed no command")
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		if seen[c.cmd] {
			continue
		}
		seen[c.cmd] = true
		for _, m := range programRe.FindAllStringSubmatch(c.cmd, -1) {
			if !strings.Contains(m[0], " --kubeconfig "+kubeconfig+" ") {
				t.Errorf("%s does not name the kubeconfig the scan was given: %s", m[2], c.cmd)
			}
		}
		t.Run("live/"+c.cmd, func(t *testing.T) { pasteCommand(t, kubeconfig, decoyFile, kubectl, c.cmd) })
	}
}

func commandsOf(ms [][]string, decode func(string) string) []printedCommand {
	var out []printedCommand
	for _, m := range ms {
		out = append(out, printedCommand{cmd: decode(m[1])})
	}
	return out
}

func markdownCommands(md string) []printedCommand {
	var out []printedCommand
	in := false
	for _, l := range strings.Split(md, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case !in && strings.HasPrefix(t, "```sh"):
			in = true
		case in && strings.HasPrefix(t, "```"):
			in = false
		case in:
			out = append(out, printedCommand{cmd: strings.TrimPrefix(l, "   ")})
		}
	}
	return out
}

// reportCluster is a cluster of a JSON report, as far as the commands' aim goes.
type reportCluster struct {
	Name, Context, ContextSource, Kubeconfig string
}

func jsonCommands(t *testing.T, out string) []printedCommand {
	cmds, clusters := jsonReportCommands(t, out)
	for _, c := range clusters {
		if c.Context != c.Name || c.ContextSource != "cluster name" || c.Kubeconfig != "" {
			t.Errorf("cluster %s: context %q from %q, kubeconfig %q; the example records none, so its name stands in, and the report says so", c.Name, c.Context, c.ContextSource, c.Kubeconfig)
		}
	}
	return cmds
}

func jsonReportCommands(t *testing.T, out string) ([]printedCommand, []reportCluster) {
	var r struct {
		Findings  []jsonFinding `json:"findings"`
		Incidents []struct {
			RootCause jsonFinding   `json:"rootCause"`
			Symptoms  []jsonFinding `json:"symptoms"`
		} `json:"incidents"`
		Clusters []reportCluster `json:"clusters"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	fs := r.Findings
	for _, inc := range r.Incidents {
		fs = append(append(fs, inc.RootCause), inc.Symptoms...)
	}
	var cmds []printedCommand
	for _, f := range fs {
		for _, s := range f.Remediation {
			for _, c := range s.Commands {
				cmds = append(cmds, printedCommand{cmd: c, notes: s.Notes})
			}
		}
	}
	return cmds, r.Clusters
}

type jsonFinding struct {
	Remediation []struct {
		Commands []string `json:"commands"`
		Notes    []string `json:"notes"`
	} `json:"remediation"`
}

var programRe = regexp.MustCompile(`(^|\|\s*|&&\s*|;\s*)(kubectl|helm) (?:--kubeconfig \S+ )?(\S+)`)

func checkAimedAndFilled(t *testing.T, format string, c printedCommand) {
	t.Helper()
	ms := programRe.FindAllStringSubmatch(c.cmd, -1)
	if len(ms) == 0 {
		t.Errorf("%s: not a kubectl or helm command: %s", format, c.cmd)
	}
	for _, m := range ms {
		want := "--context"
		if m[2] == "helm" {
			want = "--kube-context"
		}
		if m[3] != want {
			t.Errorf("%s: %s is not aimed with %s: %s", format, m[2], want, c.cmd)
		}
	}
	for _, p := range placeholderRe.FindAllString(c.cmd, -1) {
		if !slices.Contains(unknowable, p) {
			t.Errorf("%s: placeholder %s left although the bundle holds its value: %s", format, p, c.cmd)
		}
		if format == "json" && !slices.ContainsFunc(c.notes, func(n string) bool { return strings.HasPrefix(n, p+":") }) {
			t.Errorf("json: placeholder %s is not named in words in the step's notes %q", p, c.notes)
		}
	}
}

// exampleServer is one cluster of the example fleet replayed into its own API server, with
// its pods' log files copied to logs for a log stand-in.
type exampleServer struct {
	name string
	env  *testenv.Env
	logs string
}

// startExampleServers replays each example cluster into its own API server, in parallel, and
// stops them when the test ends.
func startExampleServers(t *testing.T, root string) []exampleServer {
	t.Helper()
	ctx := t.Context()
	res := make([]exampleServer, len(exampleClusters))
	errs := make([]error, len(exampleClusters))
	var wg sync.WaitGroup
	for i, name := range exampleClusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &res[i]
			r.name, r.logs = name, filepath.Join(root, name+"-logs")
			if r.env, errs[i] = testenv.StartProcess(ctx, filepath.Join(root, name)); errs[i] != nil {
				return
			}
			if _, err := testenv.Load(ctx, r.env.Config, example, testenv.LoadOptions{Cluster: name}); err != nil {
				errs[i] = fmt.Errorf("replaying %s: %w", name, err)
				return
			}
			_, errs[i] = testenv.CopyLogs(example, name, r.logs)
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, r := range res {
			if r.env != nil {
				if err := r.env.Stop(); err != nil {
					t.Errorf("stopping an API server: %v", err)
				}
			}
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", exampleClusters[i], err)
		}
	}
	return res
}

// mutating are the kubectl verbs that change something: the test adds --dry-run=server so
// the server validates and admits the change without storing it.
var mutating = []string{"patch", "label", "annotate", "delete", "create", "replace", "apply", "set", "scale", "cordon", "uncordon", "taint", "drain", "restart"}

var (
	podLogMissing  = regexp.MustCompile(`rejected our request for an unknown reason \(get pods (\S+)\)`)
	rolloutRestart = regexp.MustCompile(`^kubectl ((?:--kubeconfig \S+ )?--context \S+ -n \S+) rollout restart deployment/(\S+)$`)
)

func namespaceOf(cmd string) string {
	if ns := flagOf(cmd, "-n"); ns != "" {
		return ns
	}
	return "default"
}

// flagOf is the value of the first occurrence of flag in cmd, or "".
func flagOf(cmd, flag string) string {
	f := strings.Fields(cmd)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == flag {
			return f[i+1]
		}
	}
	return ""
}

// pasteCommand runs cmd (mutations as server dry runs) in a shell whose $KUBECONFIG is shell;
// kubeconfig is the file that reaches the replayed clusters.
func pasteCommand(t *testing.T, kubeconfig, shell, kubectl, cmd string) {
	if strings.HasPrefix(cmd, "helm ") {
		checkHelmCommand(t, kubeconfig, kubectl, cmd)
		return
	}
	script := withServerDryRun(cmd)
	if m := rolloutRestart.FindStringSubmatch(cmd); m != nil {
		// kubectl rollout restart has no --dry-run; it is this patch, which the server
		// validates as a dry run instead.
		script = fmt.Sprintf(`kubectl %s patch deployment %s --type merge -p '{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"%s"}}}}}' --dry-run=server`,
			m[1], m[2], time.Now().UTC().Format(time.RFC3339))
	}
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(kubectl, filepath.Join(binDir, "kubectl")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", script)
	sh.Dir = dir
	sh.Env = append(os.Environ(), "KUBECONFIG="+shell, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+dir)
	out, err := sh.CombinedOutput()
	if err == nil {
		return
	}
	text := string(out)
	switch {
	case strings.Contains(cmd, " logs ") && (strings.Contains(text, "has no log here") || podLogMissing.MatchString(text)):
		// The server resolved the deployment to its pod; only the log stand-in lacks a file,
		// because the bundle holds no such log (kubectl prints the stand-in's 400 as "rejected
		// for an unknown reason"). The pod it named must exist on that cluster.
		m := podLogMissing.FindStringSubmatch(text)
		if m != nil {
			args := []string{"--kubeconfig", kubeconfig, "--context", flagOf(cmd, "--context"), "-n", namespaceOf(cmd), "get", "pod", m[1]}
			if o, err := exec.CommandContext(ctx, kubectl, args...).CombinedOutput(); err != nil {
				t.Errorf("logs of a pod that is not there: %v\n%s", err, o)
			}
		}
		t.Logf("accepted; the bundle holds no such log: %s", strings.TrimSpace(text))
	case strings.Contains(cmd, " rollout status ") && (strings.Contains(text, "timed out waiting") || strings.Contains(text, "exceeded its progress deadline")):
		// Read-only: the rollout is stalled, which is what the finding says.
		t.Logf("accepted; the rollout is stalled: %s", strings.TrimSpace(text))
	default:
		t.Errorf("the server did not accept\n  %s\n(ran: %s)\n%s", cmd, script, text)
	}
}

// withServerDryRun adds --dry-run=server at the end of every mutating kubectl in a shell
// command, splitting at unquoted |, &&, ; and redirections.
func withServerDryRun(cmd string) string {
	var b strings.Builder
	seg := func(s string) {
		f := strings.Fields(s)
		if len(f) > 0 && f[0] == "kubectl" && slices.ContainsFunc(f, func(w string) bool { return slices.Contains(mutating, w) }) {
			b.WriteString(strings.TrimRight(s, " ") + " --dry-run=server ")
			return
		}
		b.WriteString(s)
	}
	var quote byte
	start := 0
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '|' || c == ';' || c == '>' || c == '&':
			seg(cmd[start:i])
			b.WriteByte(c)
			start = i + 1
		}
	}
	seg(cmd[start:])
	return b.String()
}

// checkHelmCommand checks what can be checked of a helm command without helm (not
// available here): its context exists, and the release (and revision) it names is stored
// on that cluster, as Helm's Secret driver keeps it.
func checkHelmCommand(t *testing.T, kubeconfig, kubectl, cmd string) {
	// What follows a pipe runs locally on helm's output (grep): only helm's part is checked.
	helmPart, _, _ := strings.Cut(cmd, "|")
	f := strings.Fields(helmPart)
	var ctxName, ns string
	var args []string
	for i := 1; i < len(f); i++ {
		switch f[i] {
		case "--kube-context":
			i++
			ctxName = f[i]
		case "--kubeconfig":
			i++
			if f[i] != kubeconfig {
				t.Errorf("helm reads %s, not the kubeconfig the scan was given (%s): %s", f[i], kubeconfig, cmd)
			}
		case "-n", "--namespace":
			i++
			ns = f[i]
		case "--version", "--revision":
			i++
		default:
			if !strings.HasPrefix(f[i], "-") {
				args = append(args, f[i])
			}
		}
	}
	if ctxName == "" || ns == "" || len(args) == 0 {
		t.Fatalf("cannot read the helm command %q", cmd)
	}
	k := func(a ...string) string {
		out, err := exec.CommandContext(t.Context(), kubectl, append([]string{"--kubeconfig", kubeconfig, "--context", ctxName, "-n", ns}, a...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", a, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	k("get", "namespace", ns)
	verb := args[0]
	if verb == "get" && len(args) > 1 { // helm get manifest|values|all|notes <release>
		verb, args = "get "+args[1], args[1:]
	}
	if verb == "list" {
		t.Logf("checked: namespace %s exists on %s (helm is not run here)", ns, ctxName)
		return
	}
	if len(args) < 2 {
		t.Fatalf("helm %s without a release: %s", verb, cmd)
	}
	rel := args[1]
	if got := k("get", "secret", "-l", "owner=helm,name="+rel, "-o", "name"); got == "" {
		t.Errorf("release %s is not stored in %s on %s: helm %s would fail", rel, ns, ctxName, verb)
	}
	if verb == "rollback" && len(args) > 2 {
		k("get", "secret", "sh.helm.release.v1."+rel+".v"+args[2])
	}
	t.Logf("checked: release %s (and the revision named) stored in %s on %s (helm is not run here)", rel, ns, ctxName)
}
