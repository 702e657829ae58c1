package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/source"
)

// RancherTokenEnv is the environment variable --rancher-url takes Rancher's API token from.
// A secret is never a flag value: flags end up in shell history and process lists.
const RancherTokenEnv = "RANCHER_TOKEN"

// rancherFlags are --rancher and --rancher-url: read every cluster a Rancher token may see
// through Rancher's proxy, from one context or one URL.
type rancherFlags struct {
	on          bool
	url         string
	maxInFlight int
	qps         float32
}

func (r *rancherFlags) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&r.on, "rancher", false, "the context is Rancher: read every cluster its token may see through Rancher's proxy (https://<rancher>/k8s/clusters/<id>)")
	fs.StringVar(&r.url, "rancher-url", "", "Rancher's URL: read every cluster the token in $"+RancherTokenEnv+" may see through Rancher's proxy (no kubeconfig needed)")
	fs.IntVar(&r.maxInFlight, "max-inflight", source.DefaultMaxInFlight, "with --rancher or --rancher-url: requests to Rancher at once, over the whole fleet (watches not counted)")
	fs.Float32Var(&r.qps, "rancher-qps", source.DefaultRancherQPS, "with --rancher or --rancher-url: requests per second to Rancher, over the whole fleet (burst twice that)")
}

// used says whether the clusters are read through Rancher.
func (r *rancherFlags) used() bool { return r.on || r.url != "" }

func (r *rancherFlags) validate(k *kubeFlags) error {
	if r.url != "" {
		u, err := url.Parse(r.url)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return usageErrorf("--rancher-url %q: want Rancher's https URL, such as https://rancher.example.com (a token is never sent over plain http)", r.url)
		}
		if len(k.contexts) > 0 || k.allContexts {
			return usageErrorf("--rancher-url reads the clusters through that URL with the token in $%s; it does not take --context or --all-contexts (use --rancher --context NAME to start from a kubeconfig context)", RancherTokenEnv)
		}
		if os.Getenv(RancherTokenEnv) == "" {
			return usageErrorf("--rancher-url needs Rancher's API token in the environment variable %s (an API key from Rancher's Account & API Keys page, token-xxxxx:yyyy); it is never taken as a flag value, so it stays out of shell history and process lists", RancherTokenEnv)
		}
	}
	if r.maxInFlight < 1 {
		return usageErrorf("--max-inflight %d: want at least 1", r.maxInFlight)
	}
	if r.qps <= 0 {
		return usageErrorf("--rancher-qps %g: want a positive rate such as %d", r.qps, source.DefaultRancherQPS)
	}
	if r.on && k.allContexts {
		return usageErrorf("--rancher with --all-contexts: --rancher already reads every cluster the token of the Rancher context may see; pick that context with --context NAME (or make it the current one)")
	}
	return nil
}

// rancherTargets expands each named context (a context for Rancher) into every cluster its
// credentials may see, read through Rancher's proxy with those credentials. A cluster reached
// through two of the contexts is read once. Printed commands about a cluster are aimed at the
// kubeconfig's own context for it when it has one (a Rancher-generated kubeconfig does);
// otherwise at the Rancher context with --server pointing at the cluster's proxy URL.
func (k *kubeFlags) rancherTargets(ctx context.Context, names []string, raw *clientcmdapi.Config, matches map[string]rancherContext) ([]source.Target, error) {
	var out []source.Target
	seen := map[string]bool{}
	for _, n := range names {
		cfg, err := k.restConfig(n)
		if err != nil {
			return nil, fmt.Errorf("context %q: %w", n, err)
		}
		base, _ := source.SplitRancherServer(cfg.Host)
		if m, ok := matches[n]; ok && m.via == viaEndpoint {
			return nil, usageErrorf("--rancher --context %q: its server %s is the cluster's own API server (an authorized cluster endpoint), not Rancher's URL; pick the context that goes through Rancher (server https://<rancher>/k8s/clusters/<id>)", n, cfg.Host)
		}
		clusters, err := k.discover(ctx, cfg, base)
		if err != nil {
			if errors.Is(err, source.ErrNotRancher) {
				return nil, usageErrorf("--rancher --context %q: its server %s is not a Rancher URL (%v)", n, cfg.Host, err)
			}
			return nil, fmt.Errorf("--rancher --context %q: %w", n, err)
		}
		ranch := n
		direct := map[string]bool{} // the cluster the Rancher context itself reaches by its proxy path
		if m, ok := matches[n]; ok && m.via == viaProxy {
			direct[m.id] = true
		}
		ts := source.RancherTargets(k.withBase(cfg, base), base, clusters, func(c source.RancherCluster) (string, string) {
			if own := contextFor(matches, base, c.ID); own != "" {
				return own, ""
			}
			if direct[c.ID] {
				return ranch, ""
			}
			return ranch, base + source.RancherClusterPath + c.ID
		})
		for _, t := range k.budgeted(ts) {
			if key := base + rancherKeySep + t.Server; !seen[key] {
				seen[key] = true
				out = append(out, t)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--rancher: the token of context %s may see no cluster", strings.Join(names, ", "))
	}
	return out, nil
}

// rancherURLTargets reads every cluster the token in $RANCHER_TOKEN may see at --rancher-url.
// The connection flags that describe a server or an identity (--certificate-authority,
// --insecure-skip-tls-verify, --tls-server-name, --proxy-url, --as, --as-group, --as-uid,
// --request-timeout) apply as they would to a kubeconfig context. Commands are aimed at the
// context a Rancher-generated kubeconfig has for each cluster when the kubeconfig holds it,
// else at the cluster's display name, the context name Rancher's kubeconfigs give it.
func (k *kubeFlags) rancherURLTargets(ctx context.Context) ([]source.Target, error) {
	base, _ := source.SplitRancherServer(k.rancher.url)
	cfg, err := k.rancherURLConfig(base)
	if err != nil {
		return nil, fmt.Errorf("--rancher-url %s: %w", base, err)
	}
	clusters, err := k.discover(ctx, cfg, base)
	if err != nil {
		if errors.Is(err, source.ErrNotRancher) {
			return nil, usageErrorf("--rancher-url %s: not a Rancher URL (%v)", base, err)
		}
		return nil, fmt.Errorf("--rancher-url %s: %w", base, err)
	}
	var matches map[string]rancherContext
	if raw, err := k.cf.ToRawKubeConfigLoader().RawConfig(); err == nil {
		matches = matchRancherContexts(&raw)
	}
	ts := source.RancherTargets(cfg, base, clusters, func(c source.RancherCluster) (string, string) {
		if own := contextFor(matches, base, c.ID); own != "" {
			return own, ""
		}
		return c.Name(), ""
	})
	if len(ts) == 0 {
		return nil, fmt.Errorf("--rancher-url %s: the token in $%s may see no cluster", base, RancherTokenEnv)
	}
	return k.budgeted(ts), nil
}

// budgeted makes every target count against the run's one request budget to Rancher.
func (k *kubeFlags) budgeted(ts []source.Target) []source.Target {
	for i := range ts {
		ts[i].Budget = k.requestBudget()
	}
	return ts
}

// requestBudget is the run's one request budget to Rancher, made on first use.
func (k *kubeFlags) requestBudget() *source.RequestBudget {
	if k.budget == nil {
		k.budget = source.NewRequestBudget(k.rancher.maxInFlight, k.rancher.qps)
	}
	return k.budget
}

// rancherURLConfig is the REST config of Rancher's URL with the token from the environment,
// built by client-go's kubeconfig machinery from an in-memory kubeconfig so that the
// connection flags mean what they mean for a context.
func (k *kubeFlags) rancherURLConfig(base string) (*rest.Config, error) {
	c := k.cf
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	cluster := &clientcmdapi.Cluster{Server: base, CertificateAuthority: str(c.CAFile), TLSServerName: str(c.TLSServerName), ProxyURL: str(c.ProxyURL)}
	if c.Insecure != nil {
		cluster.InsecureSkipTLSVerify = *c.Insecure
	}
	user := &clientcmdapi.AuthInfo{Token: os.Getenv(RancherTokenEnv), Impersonate: str(c.Impersonate), ImpersonateUID: str(c.ImpersonateUID)}
	if c.ImpersonateGroup != nil {
		user.ImpersonateGroups = *c.ImpersonateGroup
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["rancher"] = cluster
	kc.AuthInfos["rancher"] = user
	kc.Contexts["rancher"] = &clientcmdapi.Context{Cluster: "rancher", AuthInfo: "rancher"}
	kc.CurrentContext = "rancher"
	overrides := &clientcmd.ConfigOverrides{Timeout: str(c.Timeout)}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, overrides).ClientConfig()
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = k.timeout
	}
	return cfg, nil
}

// withBase is cfg aimed at Rancher's base URL (a context may point at one cluster's proxy
// path, /k8s/clusters/local for instance).
func (k *kubeFlags) withBase(cfg *rest.Config, base string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Host = base
	return c
}

// discover lists the clusters cfg's credentials may see at Rancher's base URL, within
// --timeout. The list counts against the request budget as every other request does: serve
// asks for it again while its clusters' lists keep the budget's slots busy.
func (k *kubeFlags) discover(ctx context.Context, cfg *rest.Config, base string) ([]source.RancherCluster, error) {
	dctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	c := k.withBase(cfg, base)
	k.requestBudget().Apply(c)
	return source.DiscoverRancherClusters(dctx, c)
}
