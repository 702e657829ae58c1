package cli

import (
	"sort"
	"strings"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/source"
)

// The kubeconfigs Rancher generates name each context after the cluster's display name and
// never after its ID, so a context is matched to its cluster by where it points:
//
//   - legacy (Rancher's "Download KubeConfig", pkg/kubeconfig): a context per cluster named
//     after its display name, server https://<rancher>/k8s/clusters/<id>; with an authorized
//     cluster endpoint also "<name>-<node>" contexts (server https://<node-ip>:6443) or one
//     "<name>-fqdn" context (https://<fqdn>), all sharing the one user of the file.
//   - kubeconfigs.ext.cattle.io (Rancher 2.12+, pkg/ext/stores/kubeconfig): a context
//     "rancher" whose server is Rancher's URL itself, user "rancher" (the shared token); a
//     context per cluster named after its display name, server
//     https://<rancher>/k8s/clusters/<id>, user "rancher" — or, for a cluster with an
//     authorized endpoint, user "<name>" (a cluster-scoped token) and the same
//     "<name>-<node>" or "<name>-fqdn" contexts with user "<name>".
//
// An authorized-endpoint context thus carries no cluster ID: it is matched to the proxy
// context whose name it extends with "-…" and whose user it shares.

// contextVia says how a context reaches its Rancher-managed cluster.
type contextVia int

const (
	viaProxy    contextVia = iota // https://<rancher>/k8s/clusters/<id>
	viaRancher                    // https://<rancher>: Rancher's own URL, the local cluster
	viaEndpoint                   // an authorized cluster endpoint: the cluster's own API server
)

// rancherContext is what a kubeconfig context is known to reach.
type rancherContext struct {
	base string // Rancher's base URL
	id   string // the cluster's ID: c-m-4x7kq2zt, local
	via  contextVia
}

func (r rancherContext) key() string { return r.base + rancherKeySep + r.id }

// rancherKeySep joins a Rancher URL and a cluster ID into one key.
const rancherKeySep = "\x00"

// matchRancherContexts maps the contexts of a kubeconfig that reach a Rancher-managed cluster
// to that cluster. Other contexts are absent from the map.
func matchRancherContexts(raw *clientcmdapi.Config) map[string]rancherContext {
	out := map[string]rancherContext{}
	server := func(ctx *clientcmdapi.Context) string {
		if c := raw.Clusters[ctx.Cluster]; c != nil {
			return c.Server
		}
		return ""
	}
	bases := map[string]bool{}
	var rest []string
	for name, ctx := range raw.Contexts {
		base, id := source.SplitRancherServer(server(ctx))
		if id == "" {
			rest = append(rest, name)
			continue
		}
		out[name] = rancherContext{base: base, id: id, via: viaProxy}
		bases[base] = true
	}
	sort.Strings(rest)
	for _, name := range rest {
		ctx := raw.Contexts[name]
		base, _ := source.SplitRancherServer(server(ctx))
		if bases[base] {
			// Rancher's own URL answers the Kubernetes API of the local cluster.
			out[name] = rancherContext{base: base, id: source.RancherLocalCluster, via: viaRancher}
			continue
		}
		// An authorized endpoint: the longest proxy context name it extends, same user.
		best := ""
		for pname, p := range out {
			if p.via != viaProxy || !strings.HasPrefix(name, pname+"-") || raw.Contexts[pname].AuthInfo != ctx.AuthInfo {
				continue
			}
			if len(pname) > len(best) {
				best = pname
			}
		}
		if best != "" {
			p := out[best]
			out[name] = rancherContext{base: p.base, id: p.id, via: viaEndpoint}
		}
	}
	return out
}

// onePerCluster drops contexts that reach a cluster an earlier kept context reaches. In the
// order given (explicit --context flags) the first one is kept; otherwise (--all-contexts)
// the one through Rancher's proxy is preferred to Rancher's own URL, and both to an
// authorized endpoint, as the proxy is the path that works wherever Rancher does.
func onePerCluster(names []string, matches map[string]rancherContext, keepOrder bool) []string {
	best := map[string]string{}
	for _, n := range names {
		m, ok := matches[n]
		if !ok {
			continue
		}
		cur, seen := best[m.key()]
		if !seen || !keepOrder && m.via < matches[cur].via {
			best[m.key()] = n
		}
	}
	var out []string
	for _, n := range names {
		if m, ok := matches[n]; ok && best[m.key()] != n {
			continue
		}
		out = append(out, n)
	}
	return out
}

// contextFor is the context of the kubeconfig that reaches cluster id of the Rancher at
// base, preferring the proxy path to an authorized endpoint; "" if none does. A context on
// Rancher's own URL is not taken for the local cluster here: commands aimed through the
// proxy path of "local" are sure to reach it.
func contextFor(matches map[string]rancherContext, base, id string) string {
	best := ""
	for n, m := range matches {
		if m.base != base || m.id != id || m.via == viaRancher {
			continue
		}
		if best == "" || m.via < matches[best].via || m.via == matches[best].via && n < best {
			best = n
		}
	}
	return best
}
