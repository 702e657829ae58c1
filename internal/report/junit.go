package report

import (
	"encoding/xml"
	"fmt"
	"github.com/unstick-dev/unstick/internal/plural"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
)

// JUnit XML as CI systems read it (the Ant/Surefire dialect Jenkins, GitLab and GitHub
// reporters share): one test suite per cluster, one test case per check in it. An incident
// at or above --fail-on fails the test case of the check that reported its root cause, in
// the suite of every cluster it affects (finding.Incident.Clusters), so a suite fails when
// its cluster's status is at or above --fail-on; incidents below it are listed in the
// case's system-out. Each suite carries the cluster's status as a property.

type junitSuites struct {
	XMLName   xml.Name     `xml:"testsuites"`
	Name      string       `xml:"name,attr"`
	Tests     int          `xml:"tests,attr"`
	Failures  int          `xml:"failures,attr"`
	Errors    int          `xml:"errors,attr"`
	Time      string       `xml:"time,attr"`
	Timestamp string       `xml:"timestamp,attr"`
	Suites    []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

// Bodies are CDATA so that their lines stay lines for a person reading the file.
type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

type junitText struct {
	Text string `xml:",cdata"`
}

// fleetSuite holds what no single check on a single cluster reported: fleet-wide incidents
// and errors reading the input.
const fleetSuite = "(fleet-wide)"

func renderJUnit(w io.Writer, r *Report, o Options) error {
	failOn := o.FailOn
	if failOn == 0 {
		failOn = finding.Error
	}
	checks, err := junitChecks(o)
	if err != nil {
		return err
	}
	owner := map[string]string{} // finding ID → the check that emits it
	for _, c := range checks {
		for _, id := range c.Emits {
			if _, ok := owner[id]; !ok {
				owner[id] = c.Name
			}
		}
	}
	type cell struct {
		incidents []finding.Incident
		errs      []finding.ScanError
	}
	cells := map[[2]string]*cell{} // {cluster, check}
	at := func(cluster, check string) *cell {
		k := [2]string{cluster, check}
		if cells[k] == nil {
			cells[k] = &cell{}
		}
		return cells[k]
	}
	var fleetIDs []string
	// An incident fails the test case of the check that found its root cause in the suite of
	// every cluster it affects, so a suite fails exactly when its cluster's status does.
	for _, inc := range r.Incidents {
		check, ok := incidentCheck(inc, owner)
		if !ok {
			at(fleetSuite, inc.RootCause.ID).incidents = append(at(fleetSuite, inc.RootCause.ID).incidents, inc)
			fleetIDs = appendNew(fleetIDs, inc.RootCause.ID)
			continue
		}
		for _, c := range inc.Clusters {
			at(c, check).incidents = append(at(c, check).incidents, inc)
		}
	}
	var inputErrs []finding.ScanError
	for _, e := range r.Errors {
		if e.Check == "" || e.Cluster == "" {
			inputErrs = append(inputErrs, e)
			continue
		}
		at(e.Cluster, e.Check).errs = append(at(e.Cluster, e.Check).errs, e)
	}

	ts := r.EvaluatedAt.UTC().Format("2006-01-02T15:04:05")
	out := junitSuites{Name: "unstick scan", Time: "0", Timestamp: ts}
	roles := map[string]string{}
	for _, c := range r.Clusters {
		roles[c.Name] = c.Role
	}
	for _, name := range clusterNames(r) {
		s := junitSuite{Name: name, Time: "0", Timestamp: ts}
		if role := roles[name]; role != "" {
			s.Properties = append(s.Properties, junitProperty{"role", role})
		} else {
			s.Properties = append(s.Properties, junitProperty{"role", "fleet cluster (not scanned)"})
		}
		status, n := r.StatusOf(name)
		s.Properties = append(s.Properties, junitProperty{"status", status}, junitProperty{"incidents", strconv.Itoa(n)})
		// The run's verdict and what filters and suppressions hid, on every suite: JUnit has
		// no place for run-wide properties.
		s.Properties = append(s.Properties, junitProperty{"verdict", r.Verdict},
			junitProperty{"hiddenByFilters", strconv.Itoa(r.Hidden.Filtered)}, junitProperty{"hiddenBySuppressions", strconv.Itoa(r.Hidden.Suppressed)})
		for _, c := range checks {
			jc := junitCase{Name: c.Name, Classname: "unstick." + name, Time: "0"}
			if x := cells[[2]string{name, c.Name}]; x != nil {
				fillCase(&jc, x.incidents, x.errs, failOn, o.name())
			}
			s.add(jc)
		}
		out.Suites = append(out.Suites, s)
	}
	if len(fleetIDs) > 0 || len(inputErrs) > 0 {
		s := junitSuite{Name: fleetSuite, Time: "0", Timestamp: ts}
		sort.Strings(fleetIDs)
		for _, id := range fleetIDs {
			jc := junitCase{Name: id, Classname: "unstick.fleet-wide", Time: "0"}
			fillCase(&jc, cells[[2]string{fleetSuite, id}].incidents, nil, failOn, o.name())
			s.add(jc)
		}
		if len(inputErrs) > 0 {
			jc := junitCase{Name: "read input", Classname: "unstick.fleet-wide", Time: "0"}
			fillCase(&jc, nil, inputErrs, failOn, o.name())
			s.add(jc)
		}
		out.Suites = append(out.Suites, s)
	}
	for _, s := range out.Suites {
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n")
	return err
}

func (s *junitSuite) add(c junitCase) {
	s.Cases = append(s.Cases, c)
	s.Tests++
	if c.Failure != nil {
		s.Failures++
	}
	if c.Error != nil {
		s.Errors++
	}
}

// incidentCheck is the check whose test case an incident fails: the one that reports its
// root cause, else (a fleet-wide incident, which grouping makes) the first symptom's.
func incidentCheck(inc finding.Incident, owner map[string]string) (string, bool) {
	for _, f := range append([]finding.Finding{inc.RootCause}, inc.Symptoms...) {
		if c, ok := owner[f.ID]; ok {
			return c, true
		}
	}
	return "", false
}

// fillCase fails the case with the incidents at or above failOn, errors it with the checks
// that could not run, and lists the rest in system-out.
func fillCase(c *junitCase, incs []finding.Incident, errs []finding.ScanError, failOn finding.Severity, name string) {
	var failing, below []finding.Incident
	for _, inc := range incs {
		if inc.Worst() >= failOn {
			failing = append(failing, inc)
		} else {
			below = append(below, inc)
		}
	}
	if len(failing) > 0 {
		var worst finding.Severity
		ids := []string{}
		var b strings.Builder
		for _, inc := range failing {
			worst = max(worst, inc.Worst())
			ids = appendNew(ids, inc.RootCause.ID)
			writeIncident(&b, inc, name)
		}
		c.Failure = &junitProblem{
			Message: fmt.Sprintf("%s: %s", plural.Of(len(failing), "incident"), strings.Join(ids, ", ")),
			Type:    worst.String(),
			Text:    b.String(),
		}
	}
	if len(errs) > 0 {
		var b strings.Builder
		for _, e := range errs {
			b.WriteString(e.String() + "\n")
		}
		c.Error = &junitProblem{Message: firstLineOf(errs[0].Message), Type: "error", Text: b.String()}
	}
	if len(below) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s below the failure threshold:\n", plural.Of(len(below), "incident"))
		for _, inc := range below {
			writeIncident(&b, inc, name)
		}
		c.SystemOut = &junitText{b.String()}
	}
}

// writeIncident writes the root cause in full and one line per symptom.
func writeIncident(b *strings.Builder, inc finding.Incident, name string) {
	writeFinding(b, inc.RootCause, name)
	fmt.Fprintf(b, "  affects: %s\n", strings.Join(inc.Clusters, ", "))
	for _, s := range inc.Symptoms {
		fmt.Fprintf(b, "  symptom: [%s] %s %s: %s\n", strings.ToUpper(s.Severity.String()), s.ID, clusterLabel(s), s.Summary)
	}
}

func writeFinding(b *strings.Builder, f finding.Finding, name string) {
	fmt.Fprintf(b, "[%s] %s %s: %s\n  object: %s\n", strings.ToUpper(f.Severity.String()), f.ID, clusterLabel(f), f.Summary, f.Object.String())
	if f.Since != nil {
		fmt.Fprintf(b, "  since: %s\n", f.Since.UTC().Format(time.RFC3339))
	}
	for _, e := range f.Evidence {
		fmt.Fprintf(b, "  evidence: %s [%s]\n", e.Text, e.Source)
	}
	if s, ok := finding.NextStep(f); ok {
		fmt.Fprintf(b, "  next step (%s): %s\n", s.Rung, oneParagraph(s.Action))
		for _, c := range s.Commands {
			fmt.Fprintf(b, "    $ %s\n", c)
		}
	}
	fmt.Fprintf(b, "  more: %s explain %s\n", name, f.ID)
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// clusterNames lists the scanned clusters, then the clusters incidents affect that were not
// scanned themselves (Fleet clusters known only to the management cluster), sorted.
func clusterNames(r *Report) []string {
	var names []string
	seen := map[string]bool{}
	for _, c := range r.Clusters {
		if !seen[c.Name] {
			seen[c.Name] = true
			names = append(names, c.Name)
		}
	}
	var extra []string
	for _, inc := range r.Incidents {
		for _, a := range inc.Clusters {
			if !seen[a] {
				seen[a] = true
				extra = append(extra, a)
			}
		}
	}
	sort.Strings(extra)
	return append(names, extra...)
}

// junitChecks is Options.Checks, else one pseudo-check per catalogue ID.
func junitChecks(o Options) ([]CheckInfo, error) {
	if o.Checks != nil {
		return o.Checks, nil
	}
	cat, err := catalogOf(o)
	if err != nil {
		return nil, err
	}
	var out []CheckInfo
	for _, id := range cat.IDs() {
		if id == "fleet/fleetwide-failure" {
			continue // made by grouping, not by a check: it goes to the fleet suite
		}
		out = append(out, CheckInfo{Name: id, Emits: []string{id}})
	}
	return out, nil
}
