// Package judge is the one path from a snapshot to a verdict, shared by every verb that
// reports findings (scan, preflight, fix, images, serve, collect's summary): evaluate every
// check at one clock, filter, group into incidents, apply the configuration's severity
// overrides and suppressions, and say whether the result is a verdict at all.
package judge

import (
	"fmt"
	"github.com/unstick-dev/unstick/internal/plural"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/config"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Options are everything a judgement depends on besides the snapshot.
type Options struct {
	// Now is --now; zero means the snapshot's collection time, else Wallclock.
	Now time.Time
	// Wallclock is the real time: suppression expiry, and the clock of last resort.
	Wallclock time.Time

	Thresholds *check.Thresholds
	// Catalog is the catalogue with the user's overrides (--catalog, config severities).
	Catalog *catalog.Catalog
	// Config holds severity overrides and suppressions; nil means none.
	Config *config.Config
	Filter check.Filter
	// FailOn is the severity from which a finding makes the verdict "findings"; 0 never.
	FailOn finding.Severity

	// Images is what registries said; nil when they were not asked.
	Images        map[string]imageref.Facts
	TargetVersion string
	Preflight     bool
	// Errors are problems met while loading besides the snapshot's own (pull secrets).
	Errors []finding.ScanError
}

// Result is a judged report and what the configuration's suppressions did.
type Result struct {
	Report     *report.Report
	Suppressed config.Suppressed
}

// Clock sources besides the snapshot's own (snapshot.ClockRecorded, snapshot.ClockNewest).
const (
	ClockNowFlag   = "now-flag"
	ClockWallclock = "wall-clock"
)

// Judge evaluates s.
func Judge(s *snapshot.Snapshot, o Options) Result {
	now, src, warnings := evaluationTime(s, o)
	ctx := &check.Context{Snap: s, Now: now, Thresholds: o.Thresholds, Catalog: o.Catalog, Images: o.Images,
		TargetVersion: o.TargetVersion, Preflight: o.Preflight}
	res, extra := evaluate(ctx)
	kept, keptExtra := keep(o.Filter, res.Findings), keep(o.Filter, extra)
	filtered := len(res.Findings) + len(extra) - len(kept) - len(keptExtra)
	hiddenOn := map[string]int{}
	for _, fs := range [][]finding.Finding{res.Findings, extra} {
		for _, f := range fs {
			hiddenOn[f.Cluster]++
		}
	}
	incidents, fs := check.GroupApart(ctx, kept, keptExtra)
	var sup config.Suppressed
	if o.Config != nil {
		o.Config.OverrideSeverities(incidents, fs)
		incidents, fs, sup = o.Config.Apply(o.Wallclock, incidents, fs)
		warnings = append(warnings, suppressionWarnings(s, o.Config, o.Wallclock)...)
	}
	errs := append(append([]finding.ScanError{}, res.Errors...), o.Errors...)
	rep := report.New(s, now, incidents, fs, errs)
	rep.Hidden = report.Hidden{Filtered: filtered, Suppressed: sup.Total}
	rep.Clock = report.Clock{Source: src, Ignored: append([]snapshot.IgnoredTime{}, s.IgnoredTimes...)}
	// A cluster whose every finding was filtered or suppressed is not "ok": say it is hidden.
	for i := range rep.Clusters {
		c := &rep.Clusters[i]
		c.Hidden = hiddenOn[c.Name] - c.Findings
		if c.Hidden > 0 && c.Status == report.StatusOK {
			c.Status = report.StatusHidden
		}
	}
	rep.Warnings = append(append(rep.Warnings, warnings...), coverageWarnings(s)...)
	if gap := upgradeMachineryGap(s); gap != "" {
		rep.NotJudged = append(rep.NotJudged, gap)
	}
	rep.SetVerdict(o.FailOn)
	return Result{Report: rep, Suppressed: sup}
}

// evaluate runs every check. A preflight runs them as scan does too, and returns apart the
// findings only a preflight reports (a configuration risk not yet biting, a drain that would
// block): they form incidents of their own, so a preflight lists every incident scan reports,
// with the same root cause and clusters, and its own besides.
func evaluate(ctx *check.Context) (check.Result, []finding.Finding) {
	if !ctx.Preflight {
		return check.Run(ctx, check.All()), nil
	}
	scanCtx := *ctx
	scanCtx.Preflight = false
	res := check.Run(&scanCtx, check.All())
	pre := check.Run(ctx, check.All())
	seen := map[string]bool{}
	for _, f := range res.Findings {
		seen[findingKey(f)] = true
	}
	var extra []finding.Finding
	for _, f := range pre.Findings {
		if !seen[findingKey(f)] {
			f.PreflightOnly = true
			extra = append(extra, f)
		}
	}
	for _, e := range pre.Errors {
		if !slices.Contains(res.Errors, e) {
			res.Errors = append(res.Errors, e)
		}
	}
	return res, extra
}

// findingKey identifies a finding across two runs of the checks: its ID, where it was read and
// what it is about. Where both runs report it, scan's wording is kept.
func findingKey(f finding.Finding) string {
	return strings.Join([]string{f.ID, f.Cluster, f.Affects, f.Object.String()}, "\x00")
}

func keep(filter check.Filter, fs []finding.Finding) []finding.Finding {
	kept := make([]finding.Finding, 0, len(fs))
	for _, f := range fs {
		if filter.Keep(f) {
			kept = append(kept, f)
		}
	}
	return kept
}

// evaluationTime is --now, else the collection time, else the wall clock, with what the
// reader must be told about it.
func evaluationTime(s *snapshot.Snapshot, o Options) (time.Time, string, []string) {
	var warnings []string
	if len(s.IgnoredTimes) > 0 {
		var list []string
		for i, t := range s.IgnoredTimes {
			if i == 3 {
				list = append(list, fmt.Sprintf("and %d more", len(s.IgnoredTimes)-3))
				break
			}
			list = append(list, t.Time.Format(time.RFC3339)+" ("+t.Where+")")
		}
		warnings = append(warnings, fmt.Sprintf("left %s far beyond the rest of the bundle out of the evaluation time: %s; pass --now to judge at another time",
			plural.Forms(len(s.IgnoredTimes), "timestamp", "timestamps"), strings.Join(list, ", ")))
	}
	switch {
	case !o.Now.IsZero():
		if c := s.CollectedAt; !c.IsZero() && o.Now.Before(c) && s.ClockSource != snapshot.ClockLive {
			warnings = append(warnings, fmt.Sprintf("--now %s is before the objects were collected (%s): ages are measured from --now and may read short; clocks are still compared with the collection time",
				o.Now.UTC().Format(time.RFC3339), c.UTC().Format(time.RFC3339)))
		}
		return o.Now, ClockNowFlag, warnings
	case !s.CollectedAt.IsZero():
		src := s.ClockSource
		if src == "" {
			src = snapshot.ClockRecorded
		}
		return s.CollectedAt, src, warnings
	}
	now := o.Wallclock
	if now.IsZero() {
		now = time.Now()
	}
	if len(s.Clusters) > 0 {
		warnings = append(warnings, "the input records no collection time and holds no timestamps: judged at the current time")
	}
	return now, ClockWallclock, warnings
}

// suppressionWarnings names active suppressions that are limited to clusters this input
// does not hold: they hide nothing here, which may be a misspelt name.
func suppressionWarnings(s *snapshot.Snapshot, c *config.Config, now time.Time) []string {
	known := map[string]bool{}
	for _, n := range KnownClusters(s) {
		known[n] = true
	}
	var out []string
	for _, sp := range c.Suppress {
		if !sp.Active(now) {
			continue
		}
		for _, name := range sp.Clusters {
			if !known[name] {
				out = append(out, fmt.Sprintf("%s:%d: the suppression of %s names cluster %q, which is not in this input", c.Path, sp.Line, sp.ID, name))
			}
		}
	}
	return out
}

// KnownClusters lists, sorted, every cluster name a filter may use: the clusters read and
// the Fleet Clusters the management cluster knows (findings "about" a cluster name those).
func KnownClusters(s *snapshot.Snapshot) []string {
	seen := map[string]bool{}
	for _, c := range s.Clusters {
		seen[c.Name] = true
		for _, fc := range c.FleetClusters {
			seen[fc.Name] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// UnknownClusters returns the names in want that no cluster of s answers to.
func UnknownClusters(s *snapshot.Snapshot, want []string) []string {
	known := map[string]bool{}
	for _, n := range KnownClusters(s) {
		known[n] = true
	}
	var out []string
	for _, w := range want {
		if !known[w] {
			out = append(out, w)
		}
	}
	return out
}

// Objects counts the objects read across every cluster.
func Objects(s *snapshot.Snapshot) int {
	n := 0
	for _, c := range s.Clusters {
		n += report.ObjectCount(c)
	}
	return n
}
