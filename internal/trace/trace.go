// Package trace follows one change through Fleet's pipeline — commit → gitjob Job → Bundle →
// BundleDeployment per cluster → Helm release revision → workload rollout — and names the
// first stage that has not moved, with the incident the judgement produced for it. It only
// reads a snapshot and a judged report: the same objects and the same incidents scan shows.
package trace

import (
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// SchemaVersion is the version of the JSON form of a Trace (docs/trace.md).
const SchemaVersion = 1

// Stage names, in the order a change reaches them.
const (
	StageCommit     = "commit"
	StageJob        = "job"
	StageBundle     = "bundle"
	StageDeployment = "bundledeployment"
	StageRelease    = "release"
	StageRollout    = "rollout"
)

// Stage statuses.
const (
	// Reached: the change is there.
	Reached = "reached"
	// Waiting: the change has not got there yet and nothing there says why.
	Waiting = "waiting"
	// Failed: the stage's own objects report an error for the change.
	Failed = "failed"
	// NotRead: the objects of this stage are not in the input (a downstream cluster not read).
	NotRead = "not-read"
	// None: the stage does not apply (a Bundle no GitRepo made has no commit or job; a release
	// with no workload has no rollout).
	None = "n/a"
)

// Verdicts of a whole trace.
const (
	// VerdictReached: every stage that applies was reached.
	VerdictReached = "reached"
	// VerdictStopped: a stage has not been reached and the judgement holds an incident about
	// it: scan reports the same stop.
	VerdictStopped = "stopped"
	// VerdictPending: a stage has not been reached yet, and no incident says it is stuck (a
	// sync in progress, an error the agent is still retrying within the thresholds, a paused
	// BundleDeployment, or a risk the judgement reports but that does not hold the change).
	VerdictPending = "pending"
)

// Trace is one change's way through the pipeline.
type Trace struct {
	SchemaVersion int       `json:"schemaVersion"`
	EvaluatedAt   time.Time `json:"evaluatedAt"`
	// Input is the target as given ("gitrepo/fleet-default/platform", "commit b7c91f0").
	Input string `json:"input"`
	// GitRepo is namespace/name of the GitRepo the change comes from; empty for a Bundle no
	// GitRepo made.
	GitRepo string `json:"gitRepo,omitempty"`
	// Bundles are the Bundles followed, namespace/name.
	Bundles []string `json:"bundles"`
	// Commit is the commit followed, in full; empty when none is known.
	Commit string `json:"commit,omitempty"`
	// Note says why the commit followed is not the one asked for.
	Note string `json:"note,omitempty"`
	// Management is the cluster the pipeline objects were read on.
	Management string `json:"management"`
	// Stages are the six stages in order, each summarised over every Bundle and cluster.
	Stages []Stage `json:"stages"`
	// Clusters are the per-cluster rows of the BundleDeployment, release and rollout stages:
	// one per Bundle and cluster.
	Clusters []ClusterRow `json:"clusters"`
	Verdict  string       `json:"verdict"`
	// StoppedAt is the first stage not reached (Waiting or Failed); empty when reached.
	StoppedAt string `json:"stoppedAt,omitempty"`
	// Incident is the incident of the judgement that is about the stage where the change
	// stopped (or, failing that, about any object of the chain): scan's incident, with its number.
	Incident *IncidentRef `json:"incident,omitempty"`
	// Related are the other incidents about objects of the chain.
	Related []IncidentRef `json:"related,omitempty"`
}

// Stage is one step of the chain.
type Stage struct {
	Name   string `json:"stage"`
	Status string `json:"status"`
	// At is when the stage was reached, read from its objects; nil when not reached or not
	// recorded.
	At *time.Time `json:"at,omitempty"`
	// Detail says what was read: the commit, the Job, the Bundle's state, the release revision.
	Detail string `json:"detail"`
	// Objects are what the stage was read from (Kind/namespace/name).
	Objects []string `json:"objects,omitempty"`
	// Stopped marks the first stage not reached.
	Stopped bool `json:"stopped,omitempty"`

	refs []objKey
}

// ClusterRow is one Bundle on one cluster: its BundleDeployment, release and rollout.
type ClusterRow struct {
	Cluster string `json:"cluster"`
	// FleetCluster is the Fleet Cluster, namespace/name.
	FleetCluster string  `json:"fleetCluster"`
	Bundle       string  `json:"bundle"`
	Stages       []Stage `json:"stages"`
	// StoppedAt is the first of this row's stages not reached.
	StoppedAt string `json:"stoppedAt,omitempty"`

	commit string // the Bundle's fleet.cattle.io/commit label
}

// IncidentRef is an incident of the judgement, as scan numbers and names it.
type IncidentRef struct {
	// Number is the incident's position in scan's report (1-based).
	Number    int      `json:"number"`
	RootCause string   `json:"rootCause"`
	Severity  string   `json:"severity"`
	Cluster   string   `json:"cluster"`
	Affects   string   `json:"affects,omitempty"`
	Object    string   `json:"object"`
	Summary   string   `json:"summary"`
	Symptoms  []string `json:"symptoms,omitempty"`
	Clusters  []string `json:"clusters"`
	// NextStep is the incident's next safe step as scan prints it: its first command, else
	// its first line.
	NextStep string `json:"nextStep,omitempty"`
}

// objKey identifies an object on a cluster, as findings name them.
type objKey struct{ cluster, kind, namespace, name string }

// Build follows subj's change through the snapshot and ties the stage where it stopped to the
// report's incidents.
func Build(s *snapshot.Snapshot, rep *report.Report, cat *catalog.Catalog, t Target, subj *Subject) *Trace {
	tr := &Trace{SchemaVersion: SchemaVersion, EvaluatedAt: rep.EvaluatedAt, Input: t.String(), Commit: subj.Commit, Note: subj.Note, Management: subj.Management.Name}
	if subj.RepoName != "" {
		tr.GitRepo = subj.RepoNamespace + "/" + subj.RepoName
	}
	tr.Bundles = []string{} // the JSON has lists, never null
	for _, b := range subj.Bundles {
		tr.Bundles = append(tr.Bundles, b.Namespace+"/"+b.Name)
	}
	tr.Stages = []Stage{commitStage(subj), jobStage(subj), bundleStage(subj)}
	tr.Clusters = append([]ClusterRow{}, clusterRows(s, subj)...)
	if firstNotReached(tr.Stages) >= 0 {
		markPrevious(tr.Clusters, subj.Commit)
	}
	for _, name := range []string{StageDeployment, StageRelease, StageRollout} {
		tr.Stages = append(tr.Stages, fanIn(name, tr.Clusters))
	}
	markStopped(tr)
	attachIncidents(tr, rep, cat)
	return tr
}

// markPrevious rewrites, when the change has not got through the management side, the rows
// of the Bundles that do not carry the commit: what they show reached is the previous change,
// and the new one has not arrived there.
func markPrevious(rows []ClusterRow, commit string) {
	for i := range rows {
		if rows[i].commit != "" && rows[i].commit == commit {
			continue
		}
		for k := range rows[i].Stages {
			st := &rows[i].Stages[k]
			if st.Status == Reached {
				st.Status, st.At = Waiting, nil
				st.Detail = "the change has not arrived; the previous one: " + st.Detail
			}
		}
	}
}

// markStopped marks the first stage that was not reached, and each row's.
func markStopped(tr *Trace) {
	for i := range tr.Clusters {
		r := &tr.Clusters[i]
		if k := firstNotReached(r.Stages); k >= 0 {
			r.Stages[k].Stopped = true
			r.StoppedAt = r.Stages[k].Name
		}
	}
	tr.Verdict = VerdictReached
	if k := firstNotReached(tr.Stages); k >= 0 {
		tr.Stages[k].Stopped = true
		tr.StoppedAt = tr.Stages[k].Name
		tr.Verdict = VerdictPending
	}
}

func firstNotReached(st []Stage) int {
	for i, s := range st {
		if s.Status == Waiting || s.Status == Failed {
			return i
		}
	}
	return -1
}

// ExitStopped reports whether the trace is one scan would fail on by default: the change
// stopped, and its incident's root cause is an error or worse.
func (tr *Trace) ExitStopped() bool {
	if tr.Verdict != VerdictStopped || tr.Incident == nil {
		return false
	}
	sev, err := finding.ParseSeverity(tr.Incident.Severity)
	return err == nil && sev >= finding.Error
}
