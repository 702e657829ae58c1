package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
)

// SARIF 2.1.0 (OASIS), the subset unstick writes. Code-scanning services read rules from
// tool.driver.rules and results with ruleId, level, message and locations.
const (
	sarifVersion = "2.1.0"
	sarifSchema  = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	// bundleBase is the uriBaseId evidence files are relative to: the scanned bundle's root.
	bundleBase = "BUNDLEROOT"
	infoURI    = "https://github.com/unstick-dev/unstick"
)

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool               sarifTool                   `json:"tool"`
	Invocations        []sarifInvocation           `json:"invocations"`
	OriginalURIBaseIDs map[string]sarifArtifactLoc `json:"originalUriBaseIds,omitempty"`
	Results            []sarifResult               `json:"results"`
	Properties         map[string]any              `json:"properties,omitempty"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifText      `json:"shortDescription"`
	FullDescription      sarifText      `json:"fullDescription"`
	Help                 sarifText      `json:"help"`
	DefaultConfiguration sarifRuleConf  `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties,omitempty"`
}

type sarifRuleConf struct {
	Level string `json:"level"`
}

type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	EndTimeUTC                 string              `json:"endTimeUtc,omitempty"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
}

type sarifNotification struct {
	Level      string          `json:"level"`
	Message    sarifText       `json:"message"`
	Locations  []sarifLocation `json:"locations,omitempty"`
	Properties map[string]any  `json:"properties,omitempty"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifText         `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          map[string]any    `json:"properties"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
	Message          *sarifText     `json:"message,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifactLoc `json:"artifactLocation"`
	Region           *sarifRegion     `json:"region,omitempty"`
}

type sarifArtifactLoc struct {
	URI         string     `json:"uri,omitempty"`
	URIBaseID   string     `json:"uriBaseId,omitempty"`
	Description *sarifText `json:"description,omitempty"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifLogical struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

// sarifLevel maps a severity to a SARIF level: critical and error are errors, info a note.
func sarifLevel(s finding.Severity) string {
	switch s {
	case finding.Critical, finding.Error:
		return "error"
	case finding.Warning:
		return "warning"
	}
	return "note"
}

func renderSARIF(w io.Writer, r *Report, o Options) error {
	cat, err := catalogOf(o)
	if err != nil {
		return err
	}
	rules, index := sarifRules(cat, o.name())
	run := sarifRun{
		Tool:        sarifTool{Driver: sarifDriver{Name: "unstick", Version: o.ToolVersion, InformationURI: infoURI, Rules: rules}},
		Invocations: []sarifInvocation{sarifInvocationOf(r)},
		Results:     []sarifResult{},
		Properties: map[string]any{"evaluatedAt": r.EvaluatedAt.Format(time.RFC3339), "clusters": len(r.Clusters), "incidents": len(r.Incidents),
			"verdict": r.Verdict, "hiddenByFilters": r.Hidden.Filtered, "hiddenBySuppressions": r.Hidden.Suppressed, "warnings": r.Warnings,
			"clusterStatus": sarifClusterStatus(r)},
	}
	for _, e := range eachFinding(r) {
		res := sarifResultOf(e.f, index)
		res.Properties["incident"] = e.incident
		res.Properties["role"] = e.role
		if e.incident > 0 {
			res.Properties["affectedClusters"] = r.Incidents[e.incident-1].Clusters
		}
		for _, l := range res.Locations {
			if l.PhysicalLocation != nil {
				run.OriginalURIBaseIDs = map[string]sarifArtifactLoc{bundleBase: {Description: &sarifText{Text: "The root of the scanned bundle (--from)."}}}
			}
		}
		run.Results = append(run.Results, res)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(sarifLog{Schema: sarifSchema, Version: sarifVersion, Runs: []sarifRun{run}})
}

// sarifClusterStatus is every cluster's status (Report.StatusOf), by name.
func sarifClusterStatus(r *Report) map[string]string {
	out := map[string]string{}
	for _, n := range clusterNames(r) {
		out[n], _ = r.StatusOf(n)
	}
	return out
}

func catalogOf(o Options) (*catalog.Catalog, error) {
	if o.Catalog != nil {
		return o.Catalog, nil
	}
	c, err := catalog.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the catalogue: %w", err)
	}
	return c, nil
}

// sarifRules lists every catalogue ID as a rule, in catalogue order, so rule indexes are
// stable from one scan to the next.
func sarifRules(cat *catalog.Catalog, name string) ([]sarifRule, map[string]int) {
	index := map[string]int{}
	var rules []sarifRule
	for i, id := range cat.IDs() {
		e, _ := cat.Get(id)
		index[id] = i
		family, _, _ := strings.Cut(id, "/")
		rules = append(rules, sarifRule{
			ID:                   id,
			Name:                 ruleName(id),
			ShortDescription:     sarifText{Text: e.Title},
			FullDescription:      sarifText{Text: oneParagraph(e.Explanation)},
			Help:                 sarifText{Text: helpText(e, name), Markdown: helpMarkdown(e, name)},
			DefaultConfiguration: sarifRuleConf{Level: sarifLevel(e.Severity)},
			Properties:           map[string]any{"severity": e.Severity.String(), "tags": []string{"unstick", family}},
		})
	}
	return rules, index
}

// ruleName is the ID in PascalCase ("helm/release-pending" → "HelmReleasePending"), the
// form SARIF suggests for reportingDescriptor.name.
func ruleName(id string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(id, func(r rune) bool { return r == '/' || r == '-' || r == '_' || r == '.' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func oneParagraph(s string) string { return strings.Join(strings.Fields(s), " ") }

func helpText(e *catalog.Entry, name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nDetection: %s\n\nFix ladder (lowest risk first):\n", oneParagraph(e.Explanation), oneParagraph(e.Detection))
	for i, r := range e.Ladder {
		fmt.Fprintf(&b, "%d. %s (risk %s): %s\n", i+1, r.Rung, orNone(r.Risk), oneParagraph(r.Action))
		for _, c := range r.Commands {
			fmt.Fprintf(&b, "   $ %s\n", c)
		}
	}
	fmt.Fprintf(&b, "\nMore: %s explain %s", name, e.ID)
	return b.String()
}

func helpMarkdown(e *catalog.Entry, name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n**Detection.** %s\n\n**Fix ladder** (lowest risk first)\n\n", mdEscape(oneParagraph(e.Explanation)), mdEscape(oneParagraph(e.Detection)))
	for i, r := range e.Ladder {
		fmt.Fprintf(&b, "%d. *%s* (risk %s): %s\n", i+1, r.Rung, orNone(r.Risk), mdEscape(oneParagraph(r.Action)))
		if len(r.Commands) > 0 {
			b.WriteString("   ```sh\n")
			for _, c := range r.Commands {
				for _, l := range strings.Split(c, "\n") {
					fmt.Fprintf(&b, "   %s\n", l)
				}
			}
			b.WriteString("   ```\n")
		}
	}
	fmt.Fprintf(&b, "\nMore: `%s explain %s`", name, e.ID)
	return b.String()
}

func sarifInvocationOf(r *Report) sarifInvocation {
	inv := sarifInvocation{ExecutionSuccessful: true, EndTimeUTC: r.EvaluatedAt.Format(time.RFC3339)}
	for _, e := range r.Errors {
		n := sarifNotification{Level: "warning", Message: sarifText{Text: e.String()}, Properties: map[string]any{}}
		if e.Cluster != "" {
			n.Properties["cluster"] = e.Cluster
		}
		if e.Check != "" {
			n.Properties["check"] = e.Check
		}
		if f, ok := fileOf(e.File); ok && e.File != "" {
			if e.Line > 0 {
				f.Line = e.Line
			}
			n.Locations = []sarifLocation{{PhysicalLocation: physicalOf(f)}}
		}
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, n)
	}
	for _, s := range r.Skipped {
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, sarifNotification{
			Level: "note", Message: sarifText{Text: "skipped " + s.File + ": " + s.Reason},
		})
	}
	return inv
}

func physicalOf(f evidenceFile) *sarifPhysical {
	p := &sarifPhysical{ArtifactLocation: sarifArtifactLoc{URI: f.uri(), URIBaseID: bundleBase}}
	if f.Line > 0 {
		p.Region = &sarifRegion{StartLine: f.Line}
	}
	return p
}

func sarifResultOf(f finding.Finding, index map[string]int) sarifResult {
	obj := f.Object.String()
	loc := sarifLocation{LogicalLocations: []sarifLogical{{
		Name:               f.Object.Name,
		FullyQualifiedName: f.Cluster + "/" + objectPath(f.Object),
		Kind:               "resource",
	}}}
	// The first evidence that is a bundle file is the physical location; the others follow
	// as further locations, so a viewer can open each file the finding quotes.
	locs := []sarifLocation{loc}
	seen := map[string]bool{}
	for _, e := range f.Evidence {
		ef, ok := fileOf(e.Source)
		if !ok || seen[ef.Path+":"+fmt.Sprint(ef.Line)] {
			continue
		}
		seen[ef.Path+":"+fmt.Sprint(ef.Line)] = true
		if locs[0].PhysicalLocation == nil {
			locs[0].PhysicalLocation = physicalOf(ef)
			continue
		}
		locs = append(locs, sarifLocation{PhysicalLocation: physicalOf(ef), Message: &sarifText{Text: firstLineOf(e.Text)}})
	}
	text := f.Summary
	if f.Affects != "" && f.Affects != f.Cluster {
		text += " (on " + f.Cluster + ", about " + f.Affects + ")"
	} else {
		text += " (on " + f.Cluster + ")"
	}
	props := map[string]any{"severity": f.Severity.String(), "cluster": f.Cluster, "object": obj}
	if f.Affects != "" {
		props["affects"] = f.Affects
	}
	if f.Since != nil {
		props["since"] = f.Since.UTC().Format(time.RFC3339)
	}
	if len(f.Evidence) > 0 {
		ev := make([]string, 0, len(f.Evidence))
		for _, e := range f.Evidence {
			ev = append(ev, e.Text+" ["+e.Source+"]")
		}
		props["evidence"] = ev
	}
	sum := sha256.Sum256([]byte(f.ID + "\x00" + f.Cluster + "\x00" + f.Affects + "\x00" + f.Object.APIVersion + "\x00" + obj))
	ruleIndex, ok := index[f.ID]
	if !ok {
		ruleIndex = -1 // SARIF's "no rule object": an ID this catalogue does not know
	}
	return sarifResult{
		RuleID:              f.ID,
		RuleIndex:           ruleIndex,
		Level:               sarifLevel(f.Severity),
		Message:             sarifText{Text: text},
		Locations:           locs,
		PartialFingerprints: map[string]string{"unstickFinding/v1": hex.EncodeToString(sum[:16])},
		Properties:          props,
	}
}

// objectPath is apiVersion/Kind/namespace/name, the object's address within its cluster.
func objectPath(o finding.ObjectRef) string {
	p := o.APIVersion + "/" + o.Kind
	if o.Namespace != "" {
		p += "/" + o.Namespace
	}
	return p + "/" + o.Name
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// ordered is a finding with its place in the report: its incident (1-based) and role.
type ordered struct {
	f        finding.Finding
	incident int
	role     string // root-cause | symptom
}

// eachFinding walks the incidents, root cause first, then any finding no incident holds.
func eachFinding(r *Report) []ordered {
	var out []ordered
	seen := map[string]int{}
	key := func(f finding.Finding) string {
		return f.ID + "\x00" + f.Cluster + "\x00" + f.Affects + "\x00" + f.Object.String() + "\x00" + f.Summary
	}
	for i, inc := range r.Incidents {
		out = append(out, ordered{inc.RootCause, i + 1, "root-cause"})
		seen[key(inc.RootCause)]++
		for _, s := range inc.Symptoms {
			out = append(out, ordered{s, i + 1, "symptom"})
			seen[key(s)]++
		}
	}
	for _, f := range r.Findings {
		if seen[key(f)] > 0 {
			seen[key(f)]--
			continue
		}
		out = append(out, ordered{f, 0, "finding"})
	}
	return out
}
