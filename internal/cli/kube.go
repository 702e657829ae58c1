package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/source"
)

// kubeFlags are kubectl's connection flags (cli-runtime), with --context made repeatable and
// --all-contexts added, so one run can read a whole fleet of contexts.
type kubeFlags struct {
	cf          *genericclioptions.ConfigFlags
	contexts    []string
	allContexts bool
	timeout     time.Duration
	concurrency int
	logLines    int64
	rancher     rancherFlags
	// budget is the one request budget of every cluster read through Rancher in this run
	// (made on first use, kept for serve's rediscovery).
	budget *source.RequestBudget
}

func newKubeFlags() *kubeFlags {
	cf := genericclioptions.NewConfigFlags(true)
	cf.Context = nil // replaced by a repeatable --context
	cf.Namespace = nil
	cf.CacheDir = nil
	return &kubeFlags{cf: cf}
}

func (k *kubeFlags) addFlags(fs *pflag.FlagSet) {
	k.cf.AddFlags(fs)
	fs.StringArrayVar(&k.contexts, "context", nil, "kubeconfig context to read (repeatable; default: the current context)")
	fs.BoolVar(&k.allContexts, "all-contexts", false, "read every context of the kubeconfig")
	fs.DurationVar(&k.timeout, "timeout", 60*time.Second, "give up on a cluster that has not been read in this time")
	fs.IntVar(&k.concurrency, "concurrency", 8, "clusters read at once (and lists at once within a cluster)")
	fs.Int64Var(&k.logLines, "log-lines", 500, "lines of each interesting container log to read")
	k.rancher.addFlags(fs)
}

// connectionFlags are the names of the flags that choose or reach a cluster: every flag
// cli-runtime registers, and --context/--all-contexts.
func connectionFlags() map[string]bool {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	newKubeFlags().cf.AddFlags(fs)
	names := map[string]bool{"context": true, "all-contexts": true, "rancher": true, "rancher-url": true}
	fs.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	return names
}

// used reports whether any live flag was given.
func (k *kubeFlags) used(fs *pflag.FlagSet) bool { return k.usedFlag(fs) != "" }

// usedFlag is the first connection flag given on the command line ("--as"), or "".
func (k *kubeFlags) usedFlag(fs *pflag.FlagSet) string {
	conn := connectionFlags()
	name := ""
	fs.Visit(func(f *pflag.Flag) {
		if name == "" && conn[f.Name] {
			name = "--" + f.Name
		}
	})
	return name
}

// validate refuses values that have no meaning (a negative count or duration would be
// taken as "no limit" or make the read give up at once).
func (k *kubeFlags) validate() error {
	if k.timeout <= 0 {
		return usageErrorf("--timeout %s: want a positive duration such as 60s", k.timeout)
	}
	if k.concurrency < 1 {
		return usageErrorf("--concurrency %d: want at least 1", k.concurrency)
	}
	if k.logLines < 0 {
		return usageErrorf("--log-lines %d: want 0 (no logs) or more", k.logLines)
	}
	return nil
}

// forContext is a copy of the connection flags aimed at one context. Every other flag stays
// as given, so --as, --as-group, --user, --cluster, client certificates, --request-timeout and
// the rest apply to each context exactly as kubectl applies them to its one.
func (k *kubeFlags) forContext(name string) *genericclioptions.ConfigFlags {
	c := k.cf
	return &genericclioptions.ConfigFlags{
		CacheDir:             c.CacheDir,
		KubeConfig:           c.KubeConfig,
		ClusterName:          c.ClusterName,
		AuthInfoName:         c.AuthInfoName,
		Context:              &name,
		Namespace:            c.Namespace,
		APIServer:            c.APIServer,
		TLSServerName:        c.TLSServerName,
		Insecure:             c.Insecure,
		CertFile:             c.CertFile,
		KeyFile:              c.KeyFile,
		CAFile:               c.CAFile,
		BearerToken:          c.BearerToken,
		Impersonate:          c.Impersonate,
		ImpersonateUID:       c.ImpersonateUID,
		ImpersonateGroup:     c.ImpersonateGroup,
		ImpersonateUserExtra: c.ImpersonateUserExtra,
		Username:             c.Username,
		Password:             c.Password,
		Timeout:              c.Timeout,
		DisableCompression:   c.DisableCompression,
		ProxyURL:             c.ProxyURL,
		WrapConfigFn:         c.WrapConfigFn,
	}
}

// restConfig is the REST config of one context, built by cli-runtime as kubectl builds it.
// Without --request-timeout a request is bounded by --timeout, the limit of a whole cluster's
// read.
func (k *kubeFlags) restConfig(context string) (*rest.Config, error) {
	cfg, err := k.forContext(context).ToRESTConfig()
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = k.timeout
	}
	return cfg, nil
}

// targets resolves the contexts to read into REST configs. With --rancher or --rancher-url
// each Rancher context stands for every cluster its token may see (rancherTargets). Contexts
// that reach one cluster twice (a Rancher kubeconfig's proxy and authorized-endpoint
// contexts) are read once.
func (k *kubeFlags) targets(ctx context.Context) ([]source.Target, error) {
	ts, err := k.resolveTargets(ctx)
	if err != nil {
		return nil, err
	}
	return k.withKubeconfig(ts)
}

// withKubeconfig makes the commands printed about each target name the kubeconfig file given
// with --kubeconfig, when that file holds the context they are aimed at: pasted into a shell
// whose kubectl reads another kubeconfig, a command naming only --context would go to that
// file's context of the same name, or to none.
func (k *kubeFlags) withKubeconfig(ts []source.Target) ([]source.Target, error) {
	if k.cf.KubeConfig == nil || *k.cf.KubeConfig == "" {
		return ts, nil
	}
	path, err := filepath.Abs(*k.cf.KubeConfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", *k.cf.KubeConfig, err)
	}
	raw, err := k.cf.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return ts, nil // --rancher-url reads no kubeconfig; its commands name no file
	}
	for i := range ts {
		ctx := ts[i].Context
		if ctx == "" {
			ctx = ts[i].Name
		}
		if _, ok := raw.Contexts[ctx]; ok {
			ts[i].Kubeconfig = path
		}
	}
	return ts, nil
}

// resolveTargets is targets without the kubeconfig file commands name.
func (k *kubeFlags) resolveTargets(ctx context.Context) ([]source.Target, error) {
	if err := k.validate(); err != nil {
		return nil, err
	}
	if err := k.rancher.validate(k); err != nil {
		return nil, err
	}
	if k.rancher.url != "" {
		return k.rancherURLTargets(ctx)
	}
	raw, err := k.cf.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w (to scan an offline bundle instead, use --from DIR|FILE.tar.gz)", err)
	}
	var names []string
	switch {
	case k.allContexts:
		for n := range raw.Contexts {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) == 0 {
			return nil, usageErrorf("--all-contexts: the kubeconfig has no contexts")
		}
	case len(k.contexts) > 0:
		names = k.contexts
	default:
		if raw.CurrentContext == "" && (k.cf.APIServer == nil || *k.cf.APIServer == "") {
			return nil, fmt.Errorf("no current context in the kubeconfig: pass --context NAME or --kubeconfig FILE (or --from BUNDLE for an offline scan)")
		}
		names = []string{raw.CurrentContext}
	}
	for _, n := range names {
		if _, ok := raw.Contexts[n]; !ok && n != "" {
			return nil, usageErrorf("--context %q: no such context in the kubeconfig (it has: %s)", n, contextList(raw.Contexts))
		}
	}
	matches := matchRancherContexts(&raw)
	names = onePerCluster(names, matches, !k.allContexts)
	if k.rancher.on {
		return k.rancherTargets(ctx, names, &raw, matches)
	}
	var out []source.Target
	for _, n := range names {
		cfg, err := k.restConfig(n)
		if err != nil {
			return nil, fmt.Errorf("context %q: %w", n, err)
		}
		name := n
		if name == "" {
			name = "default"
		}
		t := source.Target{Name: name, Server: cfg.Host, Config: cfg}
		if m, ok := matches[n]; ok && m.via == viaEndpoint {
			// An authorized endpoint context is named after the cluster (its proxy context,
			// named after the display name) so that it meets its Fleet Cluster; commands keep
			// the context read through.
			if p := contextFor(matches, m.base, m.id); p != "" && p != n {
				t.Name, t.Context = p, n
			}
		}
		out = append(out, t)
	}
	return out, nil
}

func contextList[V any](m map[string]V) string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "no contexts"
	}
	return strings.Join(names, ", ")
}

func (k *kubeFlags) live(ctx context.Context, progress func(done, total int)) (*source.Live, error) {
	ts, err := k.targets(ctx)
	if err != nil {
		return nil, err
	}
	l := &source.Live{Targets: ts, Timeout: k.timeout, Concurrency: k.concurrency, LogLines: k.logLines, Progress: progress}
	if k.rancher.used() {
		// Rancher's proxy is one server for the whole fleet: lists come from the watch cache,
		// and enough clusters are read at once to keep the budget's slots busy (a cluster's
		// discovery and namespace list are one request each, one after the other).
		l.CachedLists = true
		l.Concurrency = max(k.concurrency, k.rancher.maxInFlight)
	}
	return l, nil
}
