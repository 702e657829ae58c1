// Package finding holds the result types every check produces and every report renders.
// Their JSON form is the stable, versioned output of `unstick scan -o json` (SPEC §2.2).
package finding

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Severity orders findings; the zero value is invalid on purpose.
type Severity int

const (
	Info Severity = iota + 1
	Warning
	Error
	Critical
)

var severityNames = map[Severity]string{Info: "info", Warning: "warning", Error: "error", Critical: "critical"}

func (s Severity) String() string {
	if n, ok := severityNames[s]; ok {
		return n
	}
	return "unknown"
}

// ParseSeverity accepts the lower-case names used in flags, the catalogue and JSON.
func ParseSeverity(s string) (Severity, error) {
	for k, v := range severityNames {
		if strings.EqualFold(v, s) {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (want critical, error, warning or info)", s)
}

func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ObjectRef names the Kubernetes object a finding is about.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func (o ObjectRef) String() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// Evidence is one quoted fact: where it was read and what it said.
type Evidence struct {
	Source string `json:"source"`
	Text   string `json:"text"`
}

// Step is one rung of a fix ladder as printed with a finding.
type Step struct {
	Rung     string   `json:"rung"`
	Action   string   `json:"action"`
	Risk     string   `json:"risk,omitempty"`
	Commands []string `json:"commands,omitempty"`
	// Notes say in words what the commands could not be filled with (a placeholder left
	// because the input does not hold its value) or why a command was left out.
	Notes []string `json:"notes,omitempty"`
}

// Finding is one judged fact about one object on one cluster.
type Finding struct {
	ID          string     `json:"id"`
	Severity    Severity   `json:"severity"`
	Cluster     string     `json:"cluster"`
	Object      ObjectRef  `json:"object"`
	Summary     string     `json:"summary"`
	Evidence    []Evidence `json:"evidence"`
	Since       *time.Time `json:"since,omitempty"`
	Remediation []Step     `json:"remediation"`

	// Keys tie findings about one stuck upgrade together (e.g. "agent:<cluster>"):
	// findings sharing a key end up in one incident. Not part of the output.
	Keys []string `json:"-"`
	// Signature is the cluster-independent shape of the failure, used to spot the
	// same failure on many clusters at once. Not part of the output.
	Signature string `json:"-"`
	// Vars fill the placeholders of the remediation commands (<namespace>, <release>, ...)
	// beyond what the object itself tells. Not part of the output.
	Vars map[string]string `json:"-"`
	// Affects names the downstream cluster a management-side finding is about.
	Affects string `json:"affects,omitempty"`
	// LinkedBy is, for a symptom of an incident, the evidence that ties it to the incident:
	// the correlation key (an object, a message or a node) it shares with the finding it was
	// linked through, or the failure signature it shares with the root cause of a fleet-wide
	// failure. Empty on a root cause.
	LinkedBy string `json:"linkedBy,omitempty"`
	// PreflightOnly marks a finding only a preflight reports (a configuration risk not yet
	// biting, a drain that would block): scan does not report it, and it never joins an
	// incident scan reports.
	PreflightOnly bool `json:"preflightOnly,omitempty"`
	// Awaits are the keys (among Keys) of the workloads this finding's failure waited for,
	// such as a Helm wait that timed out: a finding about one of them is its cause, whatever
	// their catalogue ranks. Not part of the output.
	Awaits []string `json:"-"`
}

// Incident groups the findings of one stuck upgrade, root cause first.
type Incident struct {
	RootCause Finding   `json:"rootCause"`
	Symptoms  []Finding `json:"symptoms"`
	// Clusters are the clusters the incident affects, sorted: every cluster one of its
	// findings was read on and every cluster one of them is about (Affects). A Rancher
	// drain blocked on prod-eu-2 affects prod-eu-2 though its evidence is on the management
	// cluster. Every view takes a cluster's status from the incidents naming it here.
	Clusters []string `json:"clusters"`
	// NextStep is the root cause's next safe step (NextStep): the one step every view
	// prints for the incident and the one fix takes or guides first.
	NextStep *Step `json:"nextStep,omitempty"`
}

// NewIncident groups root and its symptoms and attributes the incident to the clusters it
// affects.
func NewIncident(root Finding, symptoms []Finding) Incident {
	inc := Incident{RootCause: root, Symptoms: symptoms}
	inc.Clusters = affectedClusters(inc)
	if st, ok := NextStep(root); ok {
		inc.NextStep = &st
	}
	return inc
}

// NextStep is the first rung of f's ladder that changes something and still has a command
// (personalising leaves out commands that cannot apply, such as a restart of a Deployment the
// cluster does not have), else the first that changes something, else the first rung.
func NextStep(f Finding) (Step, bool) {
	for _, s := range f.Remediation {
		if s.Rung != "observe" && len(s.Commands) > 0 {
			return s, true
		}
	}
	for _, s := range f.Remediation {
		if s.Rung != "observe" {
			return s, true
		}
	}
	if len(f.Remediation) > 0 {
		return f.Remediation[0], true
	}
	return Step{}, false
}

func affectedClusters(inc Incident) []string {
	seen := map[string]bool{}
	out := []string{}
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, f := range append([]Finding{inc.RootCause}, inc.Symptoms...) {
		add(f.Cluster)
		add(f.Affects)
	}
	sort.Strings(out)
	return out
}

// Worst is the incident's severity for the clusters it affects: the worst of its findings
// (the root cause's, unless a symptom is worse).
func (inc Incident) Worst() Severity {
	w := inc.RootCause.Severity
	for _, f := range inc.Symptoms {
		w = max(w, f.Severity)
	}
	return w
}

// Affects says whether the incident affects cluster.
func (inc Incident) Affects(cluster string) bool {
	i := sort.SearchStrings(inc.Clusters, cluster)
	return i < len(inc.Clusters) && inc.Clusters[i] == cluster
}

// ScanError is a check, file or object that could not be read or judged.
type ScanError struct {
	Cluster string `json:"cluster,omitempty"`
	Check   string `json:"check,omitempty"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

func (e ScanError) String() string {
	var b strings.Builder
	if e.Cluster != "" {
		b.WriteString("[" + e.Cluster + "] ")
	}
	if e.Check != "" {
		b.WriteString("check " + e.Check + ": ")
	}
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}
