package classify

import (
	"strings"
	"testing"
)

// asciiUpper upper-cases ASCII letters only: the table is ASCII and matched case-insensitively.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// FuzzClassify runs one text through Classify (as a whole), ClassifyLines (split into lines)
// and Signature.
func FuzzClassify(f *testing.F) {
	for _, s := range []struct {
		text  string
		scope uint8
	}{
		{`time="2026-11-28T08:00:01Z" level=error msg="error while running post render on files: Kustomization"`, uint8(Log)},
		{`E1128 08:00:02.000000       1 reflector.go:147] failed to list *v1alpha1.BundleDeployment: the server could not find the requested resource`, uint8(Log)},
		{`Failed to pull image "rancher/kubectl:v1.30.3": rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/rancher/kubectl:v1.30.3": not found`, uint8(Event)},
		{`0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient memory. preemption: 0/3 nodes are available`, uint8(Event)},
		{`UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress`, uint8(Status)},
		{`Get "https://10.43.0.1:443/api?timeout=32s": x509: certificate signed by unknown authority`, uint8(Any)},
		{"{\"level\":\"error\",\"ts\":\"2026-11-28T08:00:03Z\",\"msg\":\"admission webhook \\\"rancher.cattle.io\\\" denied the request\"}\nline two\n\nJob was active longer than specified deadline", uint8(Any)},
		{"\xff\xfe invalid utf-8 \x00 with nul", uint8(Any)},
		{"", 0},
	} {
		f.Add(s.text, s.scope)
	}
	f.Fuzz(func(t *testing.T, text string, scopeBits uint8) {
		scope := Scope(scopeBits) & Any
		m, ok := Classify(text, scope)
		if ok {
			if m.ID == "" || m.Rule == nil || m.Rule.ID != m.ID || m.Text != text {
				t.Fatalf("inconsistent match %+v for %q", m, text)
			}
			if m.Rule.Scopes&scope == 0 {
				t.Fatalf("rule %s (scopes %s) matched in scope %s", m.ID, m.Rule.Scopes, scope)
			}
			if !knownIDs[m.ID] {
				t.Fatalf("unknown finding ID %q", m.ID)
			}
		} else if m != (Match{}) {
			t.Fatalf("no match but a non-zero Match %+v", m)
		}
		if scope == 0 && ok {
			t.Fatal("matched in no scope")
		}
		// matching ignores ASCII case
		if um, uok := Classify(asciiUpper(text), scope); uok != ok || um.ID != m.ID {
			t.Errorf("upper-casing changed the match: %q/%v vs %q/%v", m.ID, ok, um.ID, uok)
		}

		lines := strings.Split(text, "\n")
		ms := ClassifyLines(lines, scope)
		seen := map[string]bool{}
		for _, lm := range ms {
			if seen[lm.ID] {
				t.Fatalf("ClassifyLines returned %s twice", lm.ID)
			}
			seen[lm.ID] = true
			if again, aok := Classify(lm.Text, scope); !aok || again.ID != lm.ID {
				t.Fatalf("ClassifyLines kept %q for %s but Classify says %q/%v", lm.Text, lm.ID, again.ID, aok)
			}
		}
		// every matching line's ID is reported, with the last matching line of that ID
		checked := map[string]bool{}
		for i := len(lines) - 1; i >= 0; i-- {
			lm, lok := Classify(lines[i], scope)
			if !lok || checked[lm.ID] {
				continue
			}
			checked[lm.ID] = true
			if !seen[lm.ID] {
				t.Fatalf("line %d matches %s but ClassifyLines missed it", i, lm.ID)
			}
			for _, kept := range ms {
				if kept.ID == lm.ID && kept.Text != lines[i] {
					t.Fatalf("%s: kept %q, the last matching line is %q", lm.ID, kept.Text, lines[i])
				}
			}
		}
		if len(checked) != len(ms) {
			t.Fatalf("ClassifyLines returned %d IDs, the lines match %d", len(ms), len(checked))
		}

		sig := Signature(text)
		if sig != strings.Join(strings.Fields(sig), " ") {
			t.Errorf("signature not space-normalised: %q", sig)
		}
		if strings.ContainsAny(sig, "0123456789") {
			t.Errorf("signature keeps digits: %q -> %q", text, sig)
		}
		if strings.ContainsAny(sig, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			t.Errorf("signature keeps upper-case letters: %q", sig)
		}
		if Signature(asciiUpper(text)) != sig || Signature(text) != sig {
			t.Errorf("signature depends on case or is not deterministic: %q", text)
		}
	})
}
