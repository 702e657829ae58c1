// Package report renders a scan's result: table, json, yaml, markdown, html, sarif and junit.
// The JSON shape is the stable, versioned API of SPEC §2.2.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// SchemaVersion versions the JSON/YAML output.
const SchemaVersion = "1"

// Report is everything a scan tells.
type Report struct {
	SchemaVersion string              `json:"schemaVersion"`
	EvaluatedAt   time.Time           `json:"evaluatedAt"`
	Clusters      []Cluster           `json:"clusters"`
	Incidents     []finding.Incident  `json:"incidents"`
	Findings      []finding.Finding   `json:"findings"`
	Errors        []finding.ScanError `json:"errors"`
	Skipped       []snapshot.Skipped  `json:"skipped"`

	// The verdict and what stands behind it (verdict.go): set by Judge.
	Verdict string `json:"verdict"`
	// InputComplete is false when part of the input was not read, whatever the verdict.
	InputComplete bool `json:"inputComplete"`
	// NotJudged says what the input did not let unstick judge although it was read (it holds
	// nothing of Fleet, Helm, SUC or Rancher): each makes the verdict incomplete.
	NotJudged []string `json:"notJudged"`
	FailOn    string   `json:"failOn"`
	Hidden    Hidden   `json:"hidden"`
	Clock     Clock    `json:"clock"`
	Warnings  []string `json:"warnings"`
}

// Cluster is one scanned cluster's line in the report.
type Cluster struct {
	Name         string `json:"name"`
	Role         string `json:"role"`
	FleetCluster string `json:"fleetCluster,omitempty"`
	Server       string `json:"server,omitempty"`
	// Context is the kubeconfig context the report's commands about this cluster carry;
	// ContextSource says where it comes from: "kubeconfig" (read through it, or recorded
	// by collect) or "cluster name" (nothing recorded one).
	Context       string `json:"context,omitempty"`
	ContextSource string `json:"contextSource,omitempty"`
	// ContextServer is the --server the commands pass with Context: the cluster is reached
	// through Rancher's proxy with the credentials of a context for Rancher.
	ContextServer string `json:"contextServer,omitempty"`
	// Kubeconfig is the kubeconfig file the commands pass with Context: the one given
	// with --kubeconfig to a live read.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Objects    int    `json:"objects"`
	// Findings counts the findings read on this cluster (their evidence is here); an
	// incident may affect the cluster with its evidence elsewhere (Incidents).
	Findings int `json:"findings"`
	// Incidents counts the incidents that affect this cluster (finding.Incident.Clusters),
	// wherever their evidence was read; Worst is the worst severity among them.
	Incidents int    `json:"incidents"`
	Worst     string `json:"worstSeverity,omitempty"`
	// Status is Worst when an incident affects the cluster, else ok, incomplete (read with
	// errors), no data or hidden. Every view shows this status.
	Status string `json:"status"`
	// Hidden counts this cluster's findings that filters and suppressions kept out.
	Hidden int `json:"hidden,omitempty"`
}

// New assembles a report; slices are never nil so JSON shows [] rather than null.
func New(s *snapshot.Snapshot, now time.Time, incidents []finding.Incident, fs []finding.Finding, errs []finding.ScanError) *Report {
	r := &Report{SchemaVersion: SchemaVersion, EvaluatedAt: now.UTC(), Incidents: incidents, Findings: fs, Skipped: append([]snapshot.Skipped{}, s.Skipped...)}
	r.Errors = append(append([]finding.ScanError{}, s.Errors...), errs...)
	// Every view reads an incident's clusters and next step from the incident; they are
	// derived here once more from its findings, as the configuration's overrides and
	// suppressions left them, so no view re-derives them and none can disagree.
	for i, inc := range r.Incidents {
		r.Incidents[i] = finding.NewIncident(inc.RootCause, inc.Symptoms)
	}
	for _, c := range s.Clusters {
		rc := Cluster{Name: c.Name, Role: string(c.Role), FleetCluster: c.FleetCluster, Server: c.Server, Objects: ObjectCount(c),
			Context: c.Context, ContextSource: string(c.ContextSource), ContextServer: c.ContextServer, Kubeconfig: c.Kubeconfig}
		for _, f := range fs {
			if f.Cluster == c.Name {
				rc.Findings++
			}
		}
		r.Clusters = append(r.Clusters, rc)
	}
	r.SetClusterStatuses()
	r.normalise()
	r.redactQuoted()
	return r
}

// ObjectCount counts the objects read for one cluster.
func ObjectCount(c *snapshot.Cluster) int {
	return len(c.Namespaces) + len(c.Nodes) + len(c.Pods) + len(c.Events) + len(c.ConfigMaps) + len(c.Secrets) +
		len(c.ResourceQuotas) + len(c.Deployments) + len(c.ReplicaSets) + len(c.DaemonSets) + len(c.Jobs) + len(c.CRDs) +
		len(c.FleetClusters) + len(c.Bundles) + len(c.BundleDeployments) + len(c.ClusterRegistrations) + len(c.Contents) + len(c.GitRepos) + len(c.HelmOps) + len(c.Plans) + len(c.EtcdSnapshots) + len(c.Other)
}

func (r *Report) normalise() {
	if r.Clusters == nil {
		r.Clusters = []Cluster{}
	}
	if r.Incidents == nil {
		r.Incidents = []finding.Incident{}
	}
	if r.Findings == nil {
		r.Findings = []finding.Finding{}
	}
	if r.Errors == nil {
		r.Errors = []finding.ScanError{}
	}
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	if r.NotJudged == nil {
		r.NotJudged = []string{}
	}
	if r.Clock.Ignored == nil {
		r.Clock.Ignored = []snapshot.IgnoredTime{}
	}
	if r.Verdict == "" {
		r.SetVerdict(finding.Error)
	}
	fix := func(f *finding.Finding) {
		if f.Evidence == nil {
			f.Evidence = []finding.Evidence{}
		}
		if f.Remediation == nil {
			f.Remediation = []finding.Step{}
		}
	}
	for i := range r.Findings {
		fix(&r.Findings[i])
	}
	for i := range r.Incidents {
		fix(&r.Incidents[i].RootCause)
		if r.Incidents[i].Clusters == nil {
			r.Incidents[i].Clusters = []string{}
		}
		if r.Incidents[i].Symptoms == nil {
			r.Incidents[i].Symptoms = []finding.Finding{}
		}
		for j := range r.Incidents[i].Symptoms {
			fix(&r.Incidents[i].Symptoms[j])
		}
	}
}

// Worst is the highest severity among the findings (0 when there are none).
func (r *Report) Worst() finding.Severity {
	var w finding.Severity
	for _, f := range r.Findings {
		w = max(w, f.Severity)
	}
	return w
}

// Formats lists the output formats, in the order --help shows them.
var Formats = []string{"table", "json", "yaml", "markdown", "html", "sarif", "junit"}

// Options tune rendering.
type Options struct {
	Color bool // ANSI colour in the table
	Width int  // table width; 0 means 100
	// Name is how the tool is invoked, for the hints it prints ("unstick", or
	// "kubectl unstick" as the kubectl plugin); "" means unstick.
	Name string

	// Catalog supplies rule titles and help (sarif) and the check list (junit); nil means
	// the built-in catalogue.
	Catalog *catalog.Catalog
	// ToolVersion is the unstick version named in sarif and html.
	ToolVersion string
	// FailOn is the severity from which a finding fails a junit test case (--fail-on);
	// 0 means error, FailNever means no finding fails one.
	FailOn finding.Severity
	// Checks are the checks that ran, each with the IDs it emits: junit has one test case
	// per check per cluster. Nil means one test case per catalogue ID.
	Checks []CheckInfo
}

// CheckInfo names a check and the finding IDs it may report.
type CheckInfo struct {
	Name  string
	Emits []string
}

// FailNever as Options.FailOn: findings are listed in junit but fail no test case.
const FailNever = finding.Critical + 1

// Render writes r in format.
func Render(w io.Writer, r *Report, format string, o Options) error {
	if format != "json" {
		r = r.printable()
	}
	switch format {
	case "json":
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r); err != nil {
			return err
		}
		_, err := w.Write(escapeC1(b.Bytes()))
		return err
	case "yaml":
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		y, err := yaml.JSONToYAML(b)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	case "markdown", "md":
		return renderMarkdown(w, r, o)
	case "table", "":
		return renderTable(w, r, o)
	case "html":
		return renderHTML(w, r, o)
	case "sarif":
		return renderSARIF(w, r, o)
	case "junit":
		return renderJUnit(w, r, o)
	}
	return fmt.Errorf("unknown output format %q (want one of %v)", format, Formats)
}

// countBySeverity counts incidents by their root cause's severity, worst first.
func countBySeverity(incs []finding.Incident) []string {
	n := map[finding.Severity]int{}
	for _, i := range incs {
		n[i.RootCause.Severity]++
	}
	var sevs []finding.Severity
	for s := range n {
		sevs = append(sevs, s)
	}
	sort.Slice(sevs, func(i, j int) bool { return sevs[i] > sevs[j] })
	var out []string
	for _, s := range sevs {
		out = append(out, fmt.Sprintf("%d %s", n[s], s))
	}
	return out
}

func (o Options) name() string {
	if o.Name == "" {
		return "unstick"
	}
	return o.Name
}

// escapeC1 writes DEL and the C1 control characters, which encoding/json leaves raw and
// some terminals act on, as \u escapes: the same JSON value, safe to print. They can only
// occur inside strings, so every occurrence is escaped.
func escapeC1(b []byte) []byte {
	if !bytes.ContainsFunc(b, func(r rune) bool { return r == 0x7f || r >= 0x80 && r <= 0x9f }) {
		return b
	}
	var out bytes.Buffer
	out.Grow(len(b) + 16)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == 0x7f || r >= 0x80 && r <= 0x9f {
			fmt.Fprintf(&out, `\u%04x`, r)
		} else {
			out.Write(b[:n])
		}
		b = b[n:]
	}
	return out.Bytes()
}
