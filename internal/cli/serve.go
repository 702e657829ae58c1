package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/plural"
	"github.com/unstick-dev/unstick/internal/serve"
	"github.com/unstick-dev/unstick/internal/source"
)

// serveGCPercent is serve's garbage-collection target (GOGC) unless the environment sets one.
const serveGCPercent = 50

type serveOptions struct {
	s Streams
	g *globalOptions

	listen   string
	resync   time.Duration
	debounce time.Duration
	interval time.Duration
	// pollInterval is how often the kinds serve does not watch are listed again.
	pollInterval time.Duration
	// rancherRefresh is how often --rancher/--rancher-url list Rancher's clusters again.
	rancherRefresh time.Duration
	judge          judgeFlags
	kube           *kubeFlags
	// clusterName names the cluster of the pod's ServiceAccount (in-cluster, no kubeconfig).
	clusterName string
	kubeUsed    bool
	refreshSet  bool
	// authn is auto, on or off: whether tokens are reviewed before the dashboard, the
	// findings and the metrics are served (auto: on in a pod).
	authn    string
	maxConns int
	// logReads bounds the container logs read at once (serve.Options.LogReads).
	logReads int
	shardFlags
	shard serve.Shard
}

func newServeCmd(s Streams, g *globalOptions) *cobra.Command {
	o := &serveOptions{s: s, g: g, kube: newKubeFlags(), judge: judgeFlags{}}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Watch the fleet continuously: Prometheus metrics, health endpoints and a dashboard",
		Long: `Keeps informer caches of the clusters of the selected contexts (in a pod: its ServiceAccount)
— only the kinds and namespaces the checks need, managedFields dropped — and runs every check
again when something changes (debounced by --debounce) and every --interval, so a threshold
crossed by time alone (an agent that stopped checking in) is seen without any change.

Endpoints on --listen:
  /                 the dashboard: incidents first, then one row per cluster (auto-refreshing)
  /api/v1/findings  the last evaluation as JSON (the shape of 'unstick scan -o json',
                    with the verdict at --fail-on as scan gives it)
  /metrics          Prometheus metrics: unstick_findings{id,severity,cluster},
                    unstick_fleet_agent_heartbeat_age_seconds, unstick_fleet_agent_drift_seconds,
                    unstick_helm_release_pending_seconds, unstick_suc_plan_stuck_seconds,
                    unstick_node_cordoned_seconds, scan duration and errors, build info
  /healthz          200 while the process runs
  /readyz           200 once every cache has synced and the first evaluation is done

In a pod (--authn=auto, the default, or --authn=on anywhere), the dashboard, /api/v1/findings
and /metrics answer only requests with a bearer token that the cluster accepts (TokenReview)
and whose user may get the path under /unstick as a non-resource URL (SubjectAccessReview):
bind Prometheus to a ClusterRole with nonResourceURLs ["/unstick/metrics"] and verbs [get].
serve's own ServiceAccount needs the ClusterRole system:auth-delegator. /healthz and /readyz
stay open. Listening on a loopback address, serve answers only requests addressed to
localhost, 127.0.0.1 or [::1] (a web page cannot reach it by rebinding its own name).

With --rancher or --rancher-url, Rancher's cluster list is read again every --rancher-refresh:
a cluster added to Rancher is watched from then on, one deleted from it stops being watched and
its series go, each change said in one line on stderr. A list that fails (Rancher down, the
token revoked) keeps the clusters of the last list and is reported under errors, and as
unstick_scan_errors without a cluster label, until a list answers again.

Sharded: with --shard i/N (or --shards N / $UNSTICK_SHARDS, and the ordinal ending a
StatefulSet pod's hostname), N replicas share the clusters, each judging those whose Rancher
cluster ID hashes to it (rendezvous hashing: adding a replica moves about 1/N of them) and
exporting only their series; every replica reads Rancher's management cluster and exports
unstick_shard_info, unstick_shard_clusters and unstick_cluster_shard, so the alert rules name
a shard whose replica is gone and count its clusters stale, not healthy.

Alert rules: deploy/prometheus/unstick-rules.yaml; Helm chart: deploy/chart/unstick.
In a pod without a kubeconfig, the pod's ServiceAccount is used and the cluster is named
--cluster-name.

Container logs are read as 'unstick scan' reads them live (pods/log): the agents' and
those of containers that are not ready or have restarted, at most --max-log-reads at once. A
previous log is read again only when its container restarts again; a current log at most
every 2 minutes. Registries are not probed: image checks judge from events and statuses.

The verdict (/api/v1/findings, unstick_verdict, the dashboard) is scan's: findings at or above
--fail-on, else incomplete when part of the fleet could not be read, else clear;
unstick_verdict_failing is 1 when scan would exit non-zero (--allow-incomplete accepts an
incomplete read there). --now is for data replayed into a cluster (a test bed): it fixes the
time every evaluation judges at; on a live fleet leave it out.

Memory: serve keeps every watched object decoded once, trimmed and with shared strings, and
runs Go's garbage collector at GOGC=50 unless GOGC is set (set GOMEMLIMIT too in a container;
the Helm chart sets it from the memory limit).`,
		Example: `  # The current context, dashboard on http://127.0.0.1:9090/
  unstick serve

  # A management cluster and two downstream clusters, reachable from other hosts
  unstick serve --context rancher --context prod-eu-1 --context prod-us-1 --listen :9090

  # Every cluster the Rancher context's token may see, through Rancher's proxy; the list is
  # read again every --rancher-refresh, so clusters added to or deleted from Rancher are
  # followed
  unstick serve --rancher --context rancher

  # Treat a Helm release as stuck after 5 minutes
  unstick serve --threshold helm.pendingAfter=5m

  # A test bed holding a replayed bundle, judged at the bundle's collection time
  unstick serve --context testbed --now 2026-11-28T09:30:00Z`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.kubeUsed = o.kube.used(cmd.Flags())
			o.refreshSet = cmd.Flags().Changed("rancher-refresh")
			o.shardsSet = cmd.Flags().Changed("shards")
			if err := o.complete(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:9090", "address to serve the dashboard, /metrics and the health endpoints on")
	f.DurationVar(&o.resync, "resync", 10*time.Minute, "informer resync period (0 disables it)")
	f.DurationVar(&o.debounce, "debounce", 500*time.Millisecond, "wait this long for changes to settle before evaluating again")
	f.DurationVar(&o.interval, "interval", 30*time.Second, "evaluate at least this often, so ages and time thresholds move without changes")
	f.DurationVar(&o.pollInterval, "poll-interval", serve.DefaultPollInterval, "list the kinds that are not watched (CRDs, Events, ConfigMaps, namespaces, quotas, webhooks, ...) again this often")
	f.DurationVar(&o.rancherRefresh, "rancher-refresh", time.Minute, "with --rancher or --rancher-url: list Rancher's clusters again this often, watching new ones and dropping deleted ones (0: only at start)")
	o.judge.addFlags(f, "error", "the verdict is \"findings\" when a finding is at or above this severity: critical|error|warning|info|none")
	f.Lookup("now").Usage = "only for data replayed into a cluster: judge every evaluation as of this RFC 3339 time (default: the time of each evaluation)"
	f.Lookup("allow-incomplete").Usage = "unstick_verdict_failing is 0 rather than 1 when nothing was found but part of the fleet could not be read"
	f.IntVar(&o.logReads, "max-log-reads", serve.DefaultLogReads, "read at most this many container logs at once")
	f.StringVar(&o.clusterName, "cluster-name", "in-cluster", "in a pod without a kubeconfig: the name of this cluster in metrics and reports")
	f.StringVar(&o.authn, "authn", "auto", "auto, on or off: require a Kubernetes bearer token allowed to get the path under /unstick (TokenReview and SubjectAccessReview) for the dashboard, /api/v1/findings and /metrics; auto: on in a pod")
	f.IntVar(&o.maxConns, "max-connections", serve.DefaultLimits().MaxConns, "serve at most this many connections at once; more wait until one closes")
	f.StringVar(&o.shardFlags.shard, "shard", "", "judge only replica i's part of the clusters, of N replicas sharing them (i/N, i from 0; default: a StatefulSet pod's ordinal when --shards or $"+ShardsEnv+" is above 1)")
	f.IntVar(&o.shards, "shards", 1, "how many serve replicas share the clusters (default $"+ShardsEnv+", else 1); without --shard, this replica's is the ordinal ending its hostname")
	o.kube.addFlags(f)
	_ = cmd.RegisterFlagCompletionFunc("catalog", yamlFiles)
	_ = cmd.RegisterFlagCompletionFunc("authn", cobra.FixedCompletions([]string{"auto", "on", "off"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (o *serveOptions) complete() error {
	if err := o.judge.complete(o.g, "helm.pendingAfter=5m"); err != nil {
		return err
	}
	if o.debounce < 0 || o.interval <= 0 || o.resync < 0 || o.rancherRefresh < 0 || o.pollInterval <= 0 {
		return usageErrorf("--debounce, --resync and --rancher-refresh must not be negative, --interval and --poll-interval must be positive")
	}
	if o.refreshSet && !o.kube.rancher.on && o.kube.rancher.url == "" {
		return usageErrorf("--rancher-refresh is how often Rancher's cluster list is read again: it takes --rancher or --rancher-url")
	}
	if o.authn != "auto" && o.authn != "on" && o.authn != "off" {
		return usageErrorf("--authn %q: want auto, on or off", o.authn)
	}
	if o.maxConns < 1 {
		return usageErrorf("--max-connections must be at least 1")
	}
	if o.logReads < 1 {
		return usageErrorf("--max-log-reads must be at least 1")
	}
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return usageErrorf("--listen %q: %v", o.listen, err)
	}
	var err error
	if o.shard, err = o.shardFlags.resolve(os.Getenv, os.Hostname); err != nil {
		return err
	}
	return o.kube.validate()
}

func (o *serveOptions) run(ctx context.Context) error {
	targets, err := o.targets(ctx)
	if err != nil {
		return err
	}
	// serve holds its caches for as long as it runs and allocates little between
	// evaluations: a tighter garbage-collection target keeps its resident memory closer to
	// what the caches need (at 5,000 Fleet clusters ~400 MiB instead of ~530 MiB at Go's
	// default of 100; docs/performance.md) for a little more CPU. GOGC and GOMEMLIMIT, when
	// set, win.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	opts, err := o.serveOptions(targets)
	if err != nil {
		return err
	}
	srv, err := serve.New(opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The watches start before anything listens: when no cluster can be watched, serve says
	// so once and never claims a dashboard.
	if err := srv.Start(ctx); err != nil {
		return err
	}
	hs, httpErr, err := o.startHTTP(srv.Handler(), plural.Of(len(targets), "cluster")+srv.ShardNote(), opts.Auth != nil)
	if err != nil {
		return err
	}
	runErr := make(chan error, 1)
	go func() { runErr <- srv.Run(ctx) }()
	select {
	case err = <-runErr:
	case err = <-httpErr:
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	case <-ctx.Done():
	}
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = hs.Shutdown(sctx)
	return err
}

// targets are the clusters of the kube flags; in a pod without a kubeconfig (the Helm chart,
// the Fleet bundle), the pod's own cluster read with its ServiceAccount.
func (o *serveOptions) targets(ctx context.Context) ([]source.Target, error) {
	targets, err := o.kube.targets(ctx)
	if err == nil {
		return targets, nil
	}
	cfg, ierr := rest.InClusterConfig()
	var ue *UsageError
	if ierr != nil || o.kubeUsed || errors.As(err, &ue) {
		return nil, err
	}
	return []source.Target{{Name: o.clusterName, Server: cfg.Host, Config: cfg}}, nil
}

func (o *serveOptions) serveOptions(targets []source.Target) (serve.Options, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts := serve.Options{
		Targets: targets, Registry: reg, Catalog: o.judge.cat, Thresholds: o.judge.th, Config: o.judge.cfg,
		Debounce: o.debounce, Interval: o.interval, PollInterval: o.pollInterval, Resync: o.resync, Log: o.g.log, Version: versionString(),
		Now: o.judge.nowTime, FailOn: o.judge.failSev, AllowIncomplete: o.judge.allowIncomplete, LogReads: o.logReads, LogLines: o.kube.logLines,
		Shard: o.shard,
	}
	if o.kube.rancher.on || o.kube.rancher.url != "" {
		// The same discovery as at start; each change of the list is one line on stderr,
		// as the start line is: an operator running serve for weeks wants to see them.
		opts.Rediscover, opts.Refresh = o.kube.targets, o.rancherRefresh
		opts.Notify = func(line string) { fmt.Fprintln(o.s.ErrOut, line) }
	}
	var err error
	opts.Auth, err = o.auth(targets, os.Getenv)
	return opts, err
}

// startHTTP serves h on --listen with serve's limits (timeouts, header size, connections)
// and, on a loopback address, its Host check, and says where on stderr.
func (o *serveOptions) startHTTP(h http.Handler, clusters string, guarded bool) (*http.Server, <-chan error, error) {
	limits := serve.DefaultLimits()
	limits.MaxConns = o.maxConns
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return nil, nil, fmt.Errorf("--listen: %w", err)
	}
	hs := serve.NewHTTPServer(serve.LoopbackHostsOnly(h, ln.Addr()), limits)
	httpErr := make(chan error, 1)
	go func() { httpErr <- hs.Serve(serve.LimitListener(ln, limits)) }()
	note := ""
	if guarded {
		note = " (bearer token required, --authn)"
	}
	fmt.Fprintf(o.s.ErrOut, "%s serve: watching %s; dashboard on http://%s/%s\n", o.g.displayName, clusters, ln.Addr(), note)
	return hs, httpErr, nil
}

// auth is the token guard --authn asks for, or nil. In a pod the tokens are reviewed by the
// pod's own cluster, whose ServiceAccount tokens a Prometheus beside it sends; with --authn=on
// outside a pod, by the first watched cluster.
func (o *serveOptions) auth(targets []source.Target, getenv func(string) string) (*serve.Auth, error) {
	inPod := getenv("KUBERNETES_SERVICE_HOST") != ""
	if o.authn == "off" || (o.authn == "auto" && !inPod) {
		return nil, nil
	}
	cfg, err := rest.InClusterConfig()
	switch {
	case err == nil:
	case o.authn == "on" && len(targets) > 0:
		cfg = targets[0].Config
	default:
		return nil, fmt.Errorf("--authn=%s: in a pod, but the pod's ServiceAccount token cannot be read to review requests (%w); mount it (automountServiceAccountToken), or pass --authn=off to serve without authentication", o.authn, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("--authn: %w", err)
	}
	return serve.NewAuth(kube, o.g.log), nil
}
