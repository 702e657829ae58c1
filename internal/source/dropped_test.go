package source

import (
	"context"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// wantSkippedAt asserts a skipped entry for file at line whose reason holds reason.
func wantSkippedAt(t *testing.T, s *snapshot.Snapshot, file string, line int, reason string) {
	t.Helper()
	for _, k := range s.Skipped {
		if k.File == file && k.Line == line && strings.Contains(k.Reason, reason) {
			return
		}
	}
	t.Errorf("want %s:%d skipped as %q; got:\n%s", file, line, reason, describeSnap(s))
}

// TestLoadReportsEveryDroppedDocument: a document the loader does not turn into an object —
// a Pod under an apiVersion that does not serve Pods, no apiVersion, a bare string — used to
// vanish without a word, and the root cause with it. Each is now listed under skipped with
// its file, line and reason, while the objects around it load.
func TestLoadReportsEveryDroppedDocument(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"mixed.yaml": goodPod + "---\n" +
			// line 14: a Pod written under apps/v1, as a hand-edited dump might have it
			"apiVersion: apps/v1\nkind: Pod\nmetadata:\n  name: fleet-agent-7d9c5b6f4-zz9kq\n  namespace: cattle-fleet-system\n---\n" +
			// line 20: no apiVersion
			"kind: Pod\nmetadata:\n  name: fleet-agent-x\n---\n" +
			// line 24: a bare string, line 26: a number, line 28: a sequence, line 31: null
			"just some words\n---\n42\n---\n- a\n- b\n---\n~\n---\n" +
			// line 33: a Deployment under v1
			"apiVersion: v1\nkind: Deployment\nmetadata:\n  name: fleet-agent\n  namespace: cattle-fleet-system\n",
		"list.yaml":    "apiVersion: v1\nkind: List\nitems:\n- {}\n- null\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: listed\n    namespace: default\n",
		"array.json":   `[{"apiVersion":"v2","kind":"Pod","metadata":{"name":"v2pod"}}, "text"]`,
		"crd-job.yaml": "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n  name: train\n  namespace: ml\n",
	})
	s, err := (&Offline{Path: dir}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantSkippedAt(t, s, "mixed.yaml", 14, "apiVersion apps/v1 does not serve kind Pod (Pod is v1)")
	wantSkippedAt(t, s, "mixed.yaml", 20, "no apiVersion (kind Pod)")
	wantSkippedAt(t, s, "mixed.yaml", 24, "a bare string")
	wantSkippedAt(t, s, "mixed.yaml", 26, "a bare number")
	wantSkippedAt(t, s, "mixed.yaml", 28, "a sequence, not a mapping")
	wantSkippedAt(t, s, "mixed.yaml", 31, "an empty document (null)")
	wantSkippedAt(t, s, "mixed.yaml", 33, "apiVersion v1 does not serve kind Deployment (Deployment is in API group apps)")
	wantSkippedAt(t, s, "list.yaml", 1, "items[0]: an empty List item")
	wantSkippedAt(t, s, "list.yaml", 1, "items[1]: an empty List item")
	wantSkippedAt(t, s, "array.json", 1, "[0]: apiVersion v2 does not serve kind Pod (Pod is v1)")
	wantSkippedAt(t, s, "array.json", 1, "[1]: a bare string")
	if len(s.Skipped) != 11 || len(s.Errors) != 0 {
		t.Errorf("want exactly the 11 dropped documents skipped, no error:\n%s", describeSnap(s))
	}
	c := onlyCluster(t, s)
	if len(c.Pods) != 2 || c.Get("Pod", "default", "listed") == nil {
		t.Errorf("the good Pod and the List's Pod load:\n%s", describeSnap(s))
	}
	// A CRD's group may reuse a built-in kind's name: kept as another object, not skipped.
	if c.Get("Job", "ml", "train") == nil {
		t.Errorf("a volcano Job is kept as another object:\n%s", describeSnap(s))
	}
}
