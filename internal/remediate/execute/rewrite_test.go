package execute

import (
	"strings"
	"testing"
)

const helmManifest = `---
# Source: demo/templates/pdb.yaml
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata:
  name: demo
spec:
  minAvailable: 1   # keep one
  selector:
    matchLabels:
      app: demo
---
# Source: demo/templates/flowschema.yaml
apiVersion: "flowcontrol.apiserver.k8s.io/v1beta3"
kind: FlowSchema
metadata:
  name: demo
spec:
  priorityLevelConfiguration:
    name: global-default
  matchingPrecedence: 9000
---
# Source: demo/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
data:
  note: "apiVersion: policy/v1beta1 stays here"
`

// Only the apiVersion line of each removed document changes; comments, quoting, order and
// the other documents are kept byte for byte.
func TestRewriteManifestChangesOnlyTheAPIVersionLine(t *testing.T) {
	out, changes, refusals, err := rewriteManifest(helmManifest, 37)
	if err != nil || len(refusals) > 0 {
		t.Fatalf("err %v, refusals %v", err, refusals)
	}
	want := strings.Replace(helmManifest, "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget", "apiVersion: policy/v1\nkind: PodDisruptionBudget", 1)
	want = strings.Replace(want, `apiVersion: "flowcontrol.apiserver.k8s.io/v1beta3"`, "apiVersion: flowcontrol.apiserver.k8s.io/v1", 1)
	if out != want {
		t.Errorf("rewritten manifest:\n%s\nwant:\n%s", out, want)
	}
	if len(changes) != 2 || changes[0].String() != "PodDisruptionBudget demo: policy/v1beta1 -> policy/v1" || changes[1].To != "flowcontrol.apiserver.k8s.io/v1" {
		t.Errorf("changes %v", changes)
	}
	// Judged against 1.24 nothing is removed yet (policy/v1beta1 went in 1.25, v1beta3 in 1.32).
	if out, changes, _, _ := rewriteManifest(helmManifest, 24); out != helmManifest || len(changes) != 0 {
		t.Errorf("at 1.24: %d changes", len(changes))
	}
	left, err := removedIn(out, 37)
	if err != nil || len(left) != 0 {
		t.Errorf("the rewritten manifest still uses removed APIs: %v %v", left, err)
	}
}

// A removed API with no replacement refuses the rewrite (PodSecurityPolicy).
func TestRewriteManifestRefusesWhatHasNoReplacement(t *testing.T) {
	m := "---\napiVersion: policy/v1beta1\nkind: PodSecurityPolicy\nmetadata:\n  name: restricted\nspec: {}\n"
	out, changes, refusals, err := rewriteManifest(m, 30)
	if err != nil {
		t.Fatal(err)
	}
	if len(refusals) != 1 || len(changes) != 0 || out != m || !strings.Contains(refusals[0], "no replacement") {
		t.Errorf("refusals %v, changes %v", refusals, changes)
	}
}

// A replacement that changes the schema (extensions/v1beta1 Ingress) refuses the rewrite.
func TestRewriteManifestRefusesWhatNeedsReview(t *testing.T) {
	m := "---\napiVersion: extensions/v1beta1\nkind: Ingress\nmetadata:\n  name: web\nspec: {}\n"
	_, changes, refusals, err := rewriteManifest(m, 22)
	if err != nil || len(changes) != 0 || len(refusals) != 1 || !strings.Contains(refusals[0], "manual review") {
		t.Errorf("err %v, changes %v, refusals %v", err, changes, refusals)
	}
}

// A policy/v1beta1 PodDisruptionBudget with an explicitly empty selector protects no pod; as
// policy/v1 it would protect every pod of its namespace: the rewrite is refused for it alone.
func TestRewriteManifestRefusesAPodDisruptionBudgetWithAnEmptySelector(t *testing.T) {
	m := "---\napiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: drain-guard\nspec:\n  maxUnavailable: 0\n  selector: {}\n"
	_, changes, refusals, err := rewriteManifest(m, 25)
	if err != nil || len(changes) != 0 || len(refusals) != 1 || !strings.Contains(refusals[0], "empty spec.selector") {
		t.Errorf("err %v, changes %v, refusals %v", err, changes, refusals)
	}
}
