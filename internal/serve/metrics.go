package serve

import (
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/report"
)

// metrics are serve's Prometheus series, registered on the registry the caller passes in.
// The per-finding series are collected from the last evaluation at scrape time, so a scrape
// never sees an evaluation half-published. The *_seconds gauges are ages as of the last
// evaluation, for every object in the state (not only those past a threshold): the alert
// rules hold the thresholds.
type metrics struct {
	last         func() *state
	findings     *prometheus.Desc
	heartbeatAge *prometheus.Desc
	staleAfter   *prometheus.Desc
	drift        *prometheus.Desc
	helmPending  *prometheus.Desc
	planStuck    *prometheus.Desc
	nodeCordoned *prometheus.Desc
	scanErrors   *prometheus.Desc
	removedUses  *prometheus.Desc
	status       *prometheus.Desc
	verdict      *prometheus.Desc
	failing      *prometheus.Desc
	shard        shardDescs
	// allowIncomplete is --allow-incomplete: an incomplete read does not count as failing.
	allowIncomplete bool

	scanDuration prometheus.Histogram
	evaluations  prometheus.Counter
	lastEval     prometheus.Gauge
	cachesSynced prometheus.Gauge
	buildInfo    *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer, version string, last func() *state) *metrics {
	m := &metrics{
		last: last,
		findings: prometheus.NewDesc("unstick_findings",
			"Findings of the last evaluation, by catalogue ID, severity and the cluster they are about.", []string{"id", "severity", "cluster"}, nil),
		heartbeatAge: prometheus.NewDesc("unstick_fleet_agent_heartbeat_age_seconds",
			"Seconds since the Fleet agent of the cluster last checked in (status.agent.lastSeen; since creation when never).", []string{"cluster"}, nil),
		staleAfter: prometheus.NewDesc("unstick_fleet_agent_heartbeat_stale_after_seconds",
			"Age at which the Fleet agent's heartbeat is stale, as scan judges it: the larger of fleet.heartbeatStaleAfter and two of the agent's check-in intervals.", []string{"cluster"}, nil),
		drift: prometheus.NewDesc("unstick_fleet_agent_drift_seconds",
			"Seconds the Fleet agent the controller wants has not been the one deployed (absent when they match).", []string{"cluster"}, nil),
		helmPending: prometheus.NewDesc("unstick_helm_release_pending_seconds",
			"Seconds the newest revision of a Helm release has been pending-install, pending-upgrade or pending-rollback.", []string{"cluster", "namespace", "release"}, nil),
		planStuck: prometheus.NewDesc("unstick_suc_plan_stuck_seconds",
			"Seconds a system-upgrade-controller Plan has made no progress on its selected nodes.", []string{"cluster", "plan"}, nil),
		nodeCordoned: prometheus.NewDesc("unstick_node_cordoned_seconds",
			"Seconds a node has been cordoned with no upgrade Job running on it.", []string{"cluster", "node"}, nil),
		removedUses: prometheus.NewDesc("unstick_api_removed_in_target_uses",
			"Documents (Helm release manifests, Fleet bundle files) that use an API the Kubernetes version the cluster's next upgrade installs no longer serves (api/removed-in-target), by cluster, that version and where they are stored (helm or fleet).",
			[]string{"cluster", "kubernetes_version", "source"}, nil),
		status: prometheus.NewDesc("unstick_cluster_status",
			"Always 1: the status of each cluster as the report gives it (the worst severity of the incidents affecting it, wherever their evidence is; else ok, incomplete, no data or hidden).", []string{"cluster", "status"}, nil),
		verdict: prometheus.NewDesc("unstick_verdict",
			"Always 1: the verdict of the last evaluation at --fail-on, as 'unstick scan' gives it (findings, incomplete or clear).", []string{"verdict"}, nil),
		failing: prometheus.NewDesc("unstick_verdict_failing",
			"1 when 'unstick scan' with the same --fail-on and --allow-incomplete would exit non-zero on this evaluation (3 findings, 4 incomplete), else 0.", nil, nil),
		scanErrors: prometheus.NewDesc("unstick_scan_errors",
			"Things the last evaluation could not read or judge (forbidden, not served, a failed check), by cluster.", []string{"cluster"}, nil),
		scanDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "unstick_scan_duration_seconds",
			Help: "Time to build a snapshot from the caches and run every check.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		evaluations: prometheus.NewCounter(prometheus.CounterOpts{Name: "unstick_evaluations_total",
			Help: "Evaluations run (on change, debounced, and on the timer)."}),
		lastEval: prometheus.NewGauge(prometheus.GaugeOpts{Name: "unstick_last_evaluation_timestamp_seconds",
			Help: "When the last evaluation judged the fleet (Unix time)."}),
		cachesSynced: prometheus.NewGauge(prometheus.GaugeOpts{Name: "unstick_caches_synced",
			Help: "1 once every informer cache has completed its first list."}),
		buildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "unstick_build_info",
			Help: "Always 1; the labels say which unstick is running."}, []string{"version", "goversion"}),
		shard: newShardDescs(),
	}
	reg.MustRegister(m, m.scanDuration, m.evaluations, m.lastEval, m.cachesSynced, m.buildInfo)
	m.buildInfo.WithLabelValues(version, runtime.Version()).Set(1)
	return m
}

// Describe implements prometheus.Collector for the per-finding series.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.findings, m.heartbeatAge, m.staleAfter, m.drift, m.helmPending, m.planStuck, m.nodeCordoned, m.scanErrors, m.removedUses, m.status, m.verdict, m.failing, m.shard.info, m.shard.clusters, m.shard.clusterShard} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the series of the last evaluation.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	st := m.last()
	if st == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	type fkey struct{ id, sev, cluster string }
	counts := map[fkey]int{}
	for _, f := range st.report.Findings {
		counts[fkey{f.ID, f.Severity.String(), about(f)}]++
	}
	for k, n := range counts {
		gauge(m.findings, float64(n), k.id, k.sev, k.cluster)
	}
	for k, n := range removedInTargetUses(st.report.Findings) {
		gauge(m.removedUses, float64(n), k[0], k[1], k[2])
	}
	now := st.report.EvaluatedAt
	seen := map[string]bool{} // one series per label set, the oldest
	ages := map[string]float64{}
	type series struct {
		d      *prometheus.Desc
		labels []string
	}
	var order []string
	keyed := map[string]series{}
	for _, f := range st.ages {
		if f.Since == nil {
			continue
		}
		age := max(now.Sub(*f.Since).Seconds(), 0)
		var s series
		switch f.ID {
		case "fleet/agent-heartbeat-stale":
			s = series{m.heartbeatAge, []string{about(f)}}
		case "fleet/agent-upgrade-stuck":
			s = series{m.drift, []string{about(f)}}
		case "helm/release-pending":
			rel := f.Vars["release"]
			if rel == "" {
				rel = f.Object.Name
			}
			s = series{m.helmPending, []string{f.Cluster, f.Object.Namespace, rel}}
		case "suc/plan-stuck":
			s = series{m.planStuck, []string{f.Cluster, f.Object.Name}}
		case "suc/node-left-cordoned":
			s = series{m.nodeCordoned, []string{f.Cluster, f.Object.Name}}
		default:
			continue
		}
		k := f.ID + "\x00" + strings.Join(s.labels, "\x00")
		if !seen[k] {
			seen[k] = true
			order = append(order, k)
			keyed[k] = s
		}
		ages[k] = max(ages[k], age)
	}
	for _, k := range order {
		gauge(keyed[k].d, ages[k], keyed[k].labels...)
	}
	for c, after := range st.staleAfter {
		gauge(m.staleAfter, after.Seconds(), c)
	}
	errs := map[string]int{}
	for _, c := range st.report.Clusters {
		errs[c.Name] = 0
	}
	for _, e := range st.report.Errors {
		errs[e.Cluster]++
	}
	for c, n := range errs {
		gauge(m.scanErrors, float64(n), c)
	}
	m.collectVerdict(st, gauge)
	m.shard.collect(st.fleet, gauge)
}

// collectVerdict exports the report's cluster statuses and verdict as they are: every view
// takes them from the report (report.StatusOf), none derives its own.
func (m *metrics) collectVerdict(st *state, gauge func(*prometheus.Desc, float64, ...string)) {
	rep := st.report
	for _, c := range statusClusters(rep, st.fleet) {
		status, _ := rep.StatusOf(c)
		gauge(m.status, 1, c, status)
	}
	gauge(m.verdict, 1, rep.Verdict)
	failing := rep.Verdict == report.VerdictFindings || (rep.Verdict == report.VerdictIncomplete && !m.allowIncomplete)
	v := 0.0
	if failing {
		v = 1
	}
	gauge(m.failing, v)
}

// statusClusters are the clusters a status is shown for: every cluster read, and every
// cluster an incident affects (a downstream cluster known only to its management cluster);
// of a sharded replica, those of its shard (another replica shows the others').
func statusClusters(rep *report.Report, f *fleetMap) []string {
	seen := map[string]bool{}
	var out []string
	add := func(c string) {
		if c != "" && !seen[c] && f.owns(c) {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, c := range rep.Clusters {
		add(c.Name)
	}
	for _, inc := range rep.Incidents {
		for _, c := range inc.Clusters {
			add(c)
		}
	}
	return out
}

// removedInTargetUses counts the documents of api/removed-in-target findings by the cluster
// they are about, the Kubernetes version that removes them and where they are stored: a Helm
// release's (its Secret) or a Fleet bundle's.
func removedInTargetUses(fs []finding.Finding) map[[3]string]int {
	out := map[[3]string]int{}
	for _, f := range fs {
		if f.ID != "api/removed-in-target" {
			continue
		}
		n, err := strconv.Atoi(f.Vars["uses"])
		if err != nil || n <= 0 {
			n = 1
		}
		source := "helm"
		if f.Object.Kind == "Bundle" {
			source = "fleet"
		}
		out[[3]string{about(f), f.Vars["kubernetes-version"], source}] += n
	}
	return out
}

// about is the cluster a finding is about: the downstream cluster of a management-side
// finding, else the cluster it was found on.
func about(f finding.Finding) string {
	if f.Affects != "" {
		return f.Affects
	}
	return f.Cluster
}

// observe records one evaluation's cost and time; its series are collected from the state.
func (m *metrics) observe(now time.Time, took time.Duration) {
	m.scanDuration.Observe(took.Seconds())
	m.evaluations.Inc()
	m.lastEval.Set(float64(now.Unix()))
}
