// Package check judges a snapshot. Checks only read the snapshot and the clock they are
// given: no client, no network. Each is a small value with a stable name, listed in one
// explicit registry (registry.go).
package check

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Check is one detection rule family.
type Check struct {
	// Name identifies the check in errors and in --help (e.g. "helm/pending-release").
	Name string
	// Emits lists the catalogue IDs the check may report.
	Emits []string
	// Run judges the snapshot. It returns what it found; an error says the check could not
	// finish, and whatever findings it returned still count.
	Run func(*Context) ([]finding.Finding, error)
}

// Context is everything a check may read.
type Context struct {
	Snap       *snapshot.Snapshot
	Now        time.Time
	Thresholds *Thresholds
	Catalog    *catalog.Catalog
	// Images is what registries said about image references (keyed by the reference as the
	// workload uses it), gathered before the checks run. Nil when the registry was not asked
	// (--offline-registry): checks then rely on events, logs and conditions.
	Images map[string]imageref.Facts
	// TargetVersion is the Kubernetes version an upgrade is about to move to (preflight
	// --target-version); empty otherwise.
	TargetVersion string
	// Preflight judges readiness before an upgrade: configuration risks are reported even
	// where nothing shows them biting yet (a scan reports them only with such evidence).
	Preflight bool
	// Measure says the findings only measure (serve's age gauges): their remediation
	// commands are not personalised.
	Measure bool
}

// New starts a finding of id about obj on cluster, with the catalogue's severity and ladder.
func (c *Context) New(id string, cluster *snapshot.Cluster, obj finding.ObjectRef, summary string) finding.Finding {
	e, ok := c.Catalog.Get(id)
	if !ok {
		panic(fmt.Sprintf("check emits %q, which is not in the catalogue", id))
	}
	f := finding.Finding{ID: id, Severity: e.Severity, Object: obj, Summary: summary, Remediation: e.Steps()}
	if cluster != nil {
		f.Cluster = cluster.Name
	}
	return f
}

// Age is how long before Now t was; zero for a zero t.
func (c *Context) Age(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return c.Now.Sub(t)
}

// Result is the outcome of running every check.
type Result struct {
	Findings []finding.Finding
	Errors   []finding.ScanError
}

// Run runs checks concurrently over one snapshot. A check that fails or panics is reported
// under Errors and the others go on.
func Run(ctx *Context, checks []Check) Result {
	type out struct {
		fs  []finding.Finding
		err error
	}
	outs := make([]out, len(checks))
	var wg sync.WaitGroup
	for i, ch := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					outs[i].err = fmt.Errorf("panic: %v\n%s", r, firstFrames(debug.Stack()))
				}
			}()
			fs, err := ch.Run(ctx)
			fs, stray := keepEmitted(ch, fs)
			outs[i] = out{fs, errors.Join(err, stray)}
		}()
	}
	wg.Wait()
	var res Result
	var ix *snapIndex
	if !ctx.Measure {
		ix = indexSnapshot(ctx.Snap)
	}
	for i, o := range outs {
		for j := range o.fs {
			if !ctx.Measure {
				personalise(ix, &o.fs[j])
			}
		}
		res.Findings = append(res.Findings, o.fs...)
		if o.err != nil {
			res.Errors = append(res.Errors, finding.ScanError{Check: checks[i].Name, Message: o.err.Error()})
		}
	}
	citeRegressions(ctx.Snap, res.Findings)
	SortFindings(res.Findings)
	return res
}

// keepEmitted drops the findings whose ID the check does not declare in Emits, and says so:
// Emits is what the catalogue, the scenario coverage and users' filters rely on, so an
// undeclared ID is a bug in the check, reported rather than shown.
func keepEmitted(ch Check, fs []finding.Finding) ([]finding.Finding, error) {
	var stray []string
	kept := fs[:0]
	for _, f := range fs {
		if slices.Contains(ch.Emits, f.ID) {
			kept = append(kept, f)
			continue
		}
		if !slices.Contains(stray, f.ID) {
			stray = append(stray, f.ID)
		}
	}
	if len(stray) == 0 {
		return kept, nil
	}
	return kept, fmt.Errorf("dropped findings %s: not among the IDs check %s declares (%s)", strings.Join(stray, ", "), ch.Name, strings.Join(ch.Emits, ", "))
}

func firstFrames(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	if len(lines) > 12 {
		lines = lines[:12]
	}
	return strings.Join(lines, "\n")
}

// SortFindings orders findings by severity (worst first), then cluster, ID and object.
func SortFindings(fs []finding.Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.Object.String() < b.Object.String()
	})
}
