// Package serve is `unstick serve`: informer-backed caches of every watched cluster, the
// checks re-run on change (debounced) and on a timer (a heartbeat going stale changes no
// object), the result exported as Prometheus metrics, a JSON API and a small dashboard.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/config"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/judge"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// Options configure a Server. Targets, Registry, Catalog and Thresholds are required.
type Options struct {
	Targets []source.Target
	// Registry receives serve's metrics and is what /metrics serves: no global registry.
	Registry   *prometheus.Registry
	Catalog    *catalog.Catalog
	Thresholds *check.Thresholds
	// Config holds the severity overrides and suppressions every report honours; nil: none.
	Config *config.Config
	// Clock is the time evaluations judge at; time.Now when nil. Tests inject one to age a
	// heartbeat without waiting.
	Clock func() time.Time
	// Now, when set, is the time every evaluation judges at instead of Clock (--now: for
	// data replayed into a cluster, judged at the time it was collected).
	Now time.Time
	// FailOn is the severity from which a finding makes the verdict "findings" (--fail-on,
	// as in scan); 0: no finding does.
	FailOn finding.Severity
	// AllowIncomplete accepts an incomplete read in the verdict's exit code gauge, as
	// --allow-incomplete makes scan exit 0 on one (the report's verdict still says it).
	AllowIncomplete bool
	// LogReads bounds how many container logs are read at once; DefaultLogReads when 0.
	LogReads int
	// LogLines is how many lines of each container log are read (--log-lines, as in scan);
	// source.DefaultLogLines when 0.
	LogLines int64
	// Debounce is how long the caches must be quiet after a change before the checks run
	// again (at most 5× that under constant churn). Default 500ms.
	Debounce time.Duration
	// Interval re-evaluates with no change at all, so thresholds crossed by time alone are
	// seen. Default 30s.
	Interval time.Duration
	// Resync is the informers' resync period; 0 disables it.
	Resync time.Duration
	// PollInterval is how often the kinds that are not watched (watchedKind) are listed
	// again; DefaultPollInterval when 0.
	PollInterval time.Duration
	// Rediscover, when set, lists the clusters to watch again every Refresh (Rancher's
	// cluster list, read as at start): clusters added are watched, clusters gone stop being
	// watched and leave the report and the metrics. A list that fails keeps the last one.
	Rediscover func(context.Context) ([]source.Target, error)
	Refresh    time.Duration
	// Shard, when its Count is above 1, makes this server one replica of several: it
	// watches the clusters the shard holds (and Rancher's management cluster) and reports
	// and exports only its own (shard.go). The zero Shard is the whole fleet.
	Shard Shard
	// Notify receives one line per change of the watched clusters; nil: logged at info.
	Notify func(line string)
	// Auth, when set, guards the dashboard, /api/v1/findings and /metrics (NewAuth).
	Auth    *Auth
	Log     *slog.Logger
	Version string
}

// Server watches the targets and keeps the latest evaluation.
type Server struct {
	o       Options
	metrics *metrics
	changed chan struct{}
	// started: Start has started the informers (before Run, from the same goroutine).
	started bool

	// wmu guards the watched clusters, which Rediscover changes while serve runs.
	wmu     sync.Mutex
	members []*member
	// fleet is the last cluster list and the replica holding each cluster.
	fleet *fleetMap
	// listErr is the last list's failure while it lasts, reported with every evaluation.
	listErr         *finding.ScanError
	listFailedSince time.Time

	mu    sync.RWMutex
	last  *state
	ready bool
	// evaluated is closed and replaced after each evaluation (tests wait on it).
	evaluated chan struct{}
}

// state is one evaluation.
type state struct {
	report *report.Report
	// ages are the findings of a pass with the age thresholds at their minimum: every
	// pending release, drifting agent, stuck plan and cordoned node, with its since.
	ages []finding.Finding
	// staleAfter is, for each cluster of a heartbeat age, the age at which scan calls it
	// stale (its agent's check-in interval against fleet.heartbeatStaleAfter), so the alert
	// rules judge the heartbeat as scan does.
	staleAfter map[string]time.Duration
	took       time.Duration
	// fleet is the cluster list it was judged with, and which replica holds each cluster.
	fleet *fleetMap
}

// gaugeIDs are the findings whose since feeds a *_seconds gauge, with the threshold that
// otherwise hides them while they are young: the catalogue's gauge attribute.
func gaugeIDs(cat *catalog.Catalog) map[string]string {
	out := map[string]string{}
	for _, id := range cat.IDsWhere(func(e *catalog.Entry) bool { return e.Gauge != "" }) {
		e, _ := cat.Get(id)
		out[id] = e.Gauge
	}
	return out
}

// New prepares a server; Run starts it.
func New(o Options) (*Server, error) {
	if len(o.Targets) == 0 {
		return nil, errors.New("no cluster to watch: no kubeconfig context selected")
	}
	if o.Registry == nil || o.Catalog == nil || o.Thresholds == nil {
		return nil, errors.New("serve: Registry, Catalog and Thresholds are required")
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Debounce <= 0 {
		o.Debounce = 500 * time.Millisecond
	}
	if o.Interval <= 0 {
		o.Interval = 30 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := &Server{o: o, changed: make(chan struct{}, 1), evaluated: make(chan struct{})}
	s.metrics = newMetrics(o.Registry, o.Version, s.snapshotState)
	s.metrics.allowIncomplete = o.AllowIncomplete
	s.fleet = newFleetMap(o.Shard, o.Targets)
	for _, t := range s.fleet.watch(o.Targets) {
		m, err := s.newMember(t)
		if err != nil {
			return nil, err
		}
		s.members = append(s.members, m)
	}
	return s, nil
}

// poke says a cache changed; it never blocks an informer.
func (s *Server) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Start starts the informers of every target; they run until ctx ends. A cluster that cannot
// be reached is reported under errors and the others are watched; if none can be, Start
// fails, naming why for each, and nothing is logged besides the error it returns.
func (s *Server) Start(ctx context.Context) error {
	members := s.currentMembers()
	errs := s.startMembers(ctx, members)
	var failed []*member
	var why []string
	for i, m := range members {
		if errs[i] != nil {
			failed, why = append(failed, m), append(why, m.failed.Message)
		}
	}
	if len(failed) > 0 && len(failed) == len(members) {
		return fmt.Errorf("no cluster could be watched: %s", strings.Join(why, "; "))
	}
	for _, m := range failed {
		s.o.Log.Error("cannot watch", "cluster", m.t.Name, "err", m.failed.Message)
	}
	s.started = true
	return nil
}

// startConcurrency is how many clusters' watches are started at once. Starting one is a few
// requests made one after the other (discovery, then the namespaces); through Rancher the
// fleet's request budget bounds what they ask of it together.
const startConcurrency = 32

// startMembers starts the members' watches, startConcurrency at once; errs[i] is members[i]'s.
func (s *Server) startMembers(ctx context.Context, members []*member) []error {
	errs := make([]error, len(members))
	sem := make(chan struct{}, startConcurrency)
	var wg sync.WaitGroup
	for i, m := range members {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = s.startMember(ctx, m)
		})
	}
	wg.Wait()
	return errs
}

// Run evaluates until ctx ends, starting the informers first (Start) unless they were. It
// waits for every cache to list before the first evaluation.
func (s *Server) Run(ctx context.Context) error {
	if !s.started {
		if err := s.Start(ctx); err != nil {
			return err
		}
	}
	members := s.currentMembers()
	// Wait for the first lists before judging: a half-filled cache would report findings
	// (a missing CRD, an absent agent) that are not there.
	start := time.Now()
	for !s.synced() {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
	s.wmu.Lock()
	for _, m := range members {
		m.synced = m.failed == nil
	}
	s.wmu.Unlock()
	s.o.Log.Info("caches synced", "clusters", len(members), "took", time.Since(start).Round(time.Millisecond))
	s.metrics.cachesSynced.Set(1)
	s.evaluate()
	s.mu.Lock()
	s.ready = true
	s.mu.Unlock()
	// Listing every object at start costs a one-off peak (pages of JSON being decoded) that
	// Go's background scavenger gives back to the system only slowly; give it back now, so
	// the resident set is the steady state's from the moment serve is ready.
	debug.FreeOSMemory()

	if s.o.Rediscover != nil && s.o.Refresh > 0 {
		go s.refreshLoop(ctx)
	}
	tick := time.NewTicker(s.o.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			s.evaluate()
		case <-s.changed:
			s.debounce(ctx)
			s.evaluate()
		}
	}
}

// debounce waits until no change came for Debounce, or 5×Debounce passed since the first.
func (s *Server) debounce(ctx context.Context) {
	limit := time.NewTimer(5 * s.o.Debounce)
	defer limit.Stop()
	for {
		quiet := time.NewTimer(s.o.Debounce)
		select {
		case <-ctx.Done():
			quiet.Stop()
			return
		case <-limit.C:
			quiet.Stop()
			return
		case <-quiet.C:
			return
		case <-s.changed:
			quiet.Stop()
		}
	}
}

// synced reports whether the caches of the clusters watched from the start have listed.
func (s *Server) synced() bool {
	for _, m := range s.currentMembers() {
		if m.failed == nil && !m.w.synced() {
			return false
		}
	}
	return true
}

// evaluate builds a snapshot from the caches, runs every check, and publishes the result.
// A cluster that could not be watched is declared with the error saying why; one still
// filling its caches is left out for syncGrace, then declared with an error saying so.
func (s *Server) evaluate() {
	start := time.Now()
	wall := s.o.Clock().UTC()
	b := snapshot.NewBuilder()
	// Read just now, as a live scan's objects are: the evaluation time is this, or --now.
	b.SetReadLive(wall)
	s.wmu.Lock()
	members := append([]*member(nil), s.members...)
	synced := make([]bool, len(members))
	failed := make([]*finding.ScanError, len(members))
	for i, m := range members {
		synced[i], failed[i] = m.synced, m.failed
	}
	listErr, fleet := s.listErr, s.fleet
	s.wmu.Unlock()
	for i, m := range members {
		switch {
		case failed[i] != nil:
			b.DeclareCluster(m.t.Info())
			b.Error(*failed[i])
		case synced[i]:
			m.w.feed(b)
		case time.Since(m.added) > syncGrace:
			b.DeclareCluster(m.t.Info())
			b.Error(finding.ScanError{Cluster: m.t.Name, Message: fmt.Sprintf("%s: watched since %s, its caches have not completed their first lists yet", m.t.Label(), m.added.UTC().Format(time.RFC3339))})
		}
	}
	if listErr != nil {
		b.Error(*listErr)
	}
	fleet.declareOthers(b)
	snap := b.Build()
	rep := judge.Judge(snap, judge.Options{Now: s.o.Now, Wallclock: wall, Thresholds: s.o.Thresholds, Catalog: s.o.Catalog, Config: s.o.Config, FailOn: s.o.FailOn}).Report
	ownReport(rep, fleet, s.o.FailOn)
	now := rep.EvaluatedAt
	st := &state{report: rep, ages: ownAges(s.ages(snap, now), fleet), fleet: fleet}
	st.staleAfter = s.heartbeatStaleAfter(st.ages)
	st.took = time.Since(start)
	s.o.Log.Debug("evaluated", "findings", len(rep.Findings), "incidents", len(rep.Incidents), "took", st.took)
	s.mu.Lock()
	s.last = st
	s.metrics.observe(now, st.took)
	close(s.evaluated)
	s.evaluated = make(chan struct{})
	s.mu.Unlock()
}

// ages runs the checks behind the *_seconds gauges once more with their thresholds at 1ns,
// so every pending release or drifting agent is measured from the moment it started, not
// only once it is old enough to be a finding.
func (s *Server) ages(snap *snapshot.Snapshot, now time.Time) []finding.Finding {
	ageIDs := gaugeIDs(s.o.Catalog)
	th := check.NewThresholds(s.o.Catalog)
	for _, n := range s.o.Thresholds.Names() {
		_ = th.Set(n, s.o.Thresholds.Value(n))
	}
	for _, name := range ageIDs {
		if err := th.Set(name, "1ns"); err != nil {
			s.o.Log.Error("threshold", "err", err)
		}
	}
	var checks []check.Check
	for _, c := range check.All() {
		for _, id := range c.Emits {
			if _, ok := ageIDs[id]; ok {
				checks = append(checks, c)
				break
			}
		}
	}
	res := check.Run(&check.Context{Snap: snap, Now: now, Thresholds: th, Catalog: s.o.Catalog, Measure: true}, checks)
	var out []finding.Finding
	for _, f := range res.Findings {
		if _, ok := ageIDs[f.ID]; ok {
			out = append(out, f)
		}
	}
	return out
}

// heartbeatStaleAfter is the age at which each measured heartbeat is stale, as scan judges it.
func (s *Server) heartbeatStaleAfter(ages []finding.Finding) map[string]time.Duration {
	threshold := s.o.Thresholds.Duration("fleet.heartbeatStaleAfter")
	out := map[string]time.Duration{}
	for _, f := range ages {
		if f.ID != "fleet/agent-heartbeat-stale" {
			continue
		}
		after := threshold // never checked in: the threshold alone
		if every, err := time.ParseDuration(f.Vars[check.CheckinIntervalVar]); err == nil {
			after = check.HeartbeatStaleAfter(threshold, every)
		}
		c := about(f)
		out[c] = max(out[c], after)
	}
	return out
}

// Ready reports whether the caches synced and the first evaluation is done.
func (s *Server) Ready() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ready
}

// Report is the latest evaluation (nil before the first).
func (s *Server) Report() *report.Report {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.last == nil {
		return nil
	}
	return s.last.report
}

// Evaluated returns a channel closed by the next evaluation.
func (s *Server) Evaluated() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.evaluated
}

func (s *Server) snapshotState() *state {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.last
}
