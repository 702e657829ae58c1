package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A document the loader leaves out is in the JSON report's skipped list with its line, and
// named in the -v log; a bundle with nothing skipped still has "skipped": [].
func TestScanNamesSkippedDocuments(t *testing.T) {
	dir := t.TempDir()
	pods := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: fleet-agent-7d9c5b6f4-q8w2n\n  namespace: cattle-fleet-system\n" +
		"---\napiVersion: apps/v1\nkind: Pod\nmetadata:\n  name: fleet-agent-7d9c5b6f4-zz9kq\n  namespace: cattle-fleet-system\n"
	if err := os.WriteFile(filepath.Join(dir, "pods.yaml"), []byte(pods), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, _ := run(t, "scan", "--from", dir, "-o", "json", "-v")
	var rep struct {
		Skipped []struct {
			File   string `json:"file"`
			Line   int    `json:"line"`
			Reason string `json:"reason"`
		} `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0].File != "pods.yaml" || rep.Skipped[0].Line != 7 ||
		!strings.Contains(rep.Skipped[0].Reason, "apiVersion apps/v1 does not serve kind Pod") {
		t.Errorf("want pods.yaml:7 skipped as a Pod under apps/v1, got %+v", rep.Skipped)
	}
	if !strings.Contains(errOut, "skipped") || !strings.Contains(errOut, "pods.yaml") || !strings.Contains(errOut, "line=7") {
		t.Errorf("-v must name the skipped document:\n%s", errOut)
	}

	single := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(single, []byte(pods[:strings.Index(pods, "---")]), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, _ = run(t, "scan", "--from", single, "-o", "json")
	if !strings.Contains(out, `"skipped": []`) {
		t.Errorf("a report with nothing skipped must say \"skipped\": []:\n%s", out)
	}
}
