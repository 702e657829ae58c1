package check

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/removedapi"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// apiRemoved reports bundles and Helm releases whose manifests use a built-in apiVersion the
// cluster no longer serves. After a Kubernetes upgrade removes, say, policy/v1beta1 or
// flowcontrol.apiserver.k8s.io/v1beta3, Helm cannot even build the objects of the release it
// has on record ("unable to build kubernetes objects from current release manifest: resource
// mapping not found for name: ... no matches for kind ... ensure CRDs are installed first";
// helm#7219), so every upgrade and rollback of that release fails. The message says "CRDs",
// but it is the bundle's content that must change — not a missing CRD and not the agent that
// relays it (helm pkg/action upgrade.go; rancher/fleet helmdeployer).
var apiRemoved = Check{
	Name:  "api/removed",
	Emits: []string{"api/removed", "api/removed-in-target", "api/deprecated-in-target"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		fs := &apiFindings{byKey: map[string]*apiHit{}}
		add := fs.add
		for _, m := range ctx.Snap.Management() {
			ix := newFleetIndex(m)
			for _, bd := range m.BundleDeployments {
				msg, kind, gv := removedAPIIn(bdTexts(bd))
				if msg == "" {
					continue
				}
				target, fleetRef := bdTarget(ctx, ix, m, bd)
				bundle := fleet.BundleName(bd)
				key := BundleKey(fleetRef, bundle)
				add(key, func() finding.Finding {
					f := ctx.New("api/removed", m, bdRef(bd), removedSummary("bundle "+bundle, target, kind, gv))
					f.Affects = target
					f.Keys = []string{key}
					if fleet.IsAgentBundle(bundle) {
						f.Keys = append(f.Keys, AgentKey(fleetRef))
					}
					f.Since = timePtr(bdConditionTime(bd, "Deployed"))
					f.Signature = "api-removed|" + genericBundle(bundle) + "|" + kind + "|" + gv
					rel, ns := releaseOf(ctx.Snap, bd, bundle)
					f.Vars = map[string]string{"bundle": bundle, "release": rel, "fleet-namespace": bd.Labels.Get(fleet.LabelBundleNamespace), "group-version": gv, "namespace": ns}
					if b := bundleOf(m, bd); b != nil {
						f.Vars["n+1@forceSyncGeneration"] = strconv.FormatInt(b.Spec.ForceSyncGeneration+1, 10)
					}
					return f
				}, ev(sourceOf(m, bdRef(bd)), "%s", firstLine(msg)))
			}
		}
		for _, c := range ctx.Snap.Clusters {
			for _, hist := range releaseHistories(c) {
				// The revisions since the last deployed one: the failing run.
				for i := len(hist) - 1; i >= 0 && hist[i].Status != "deployed" && hist[i].Status != "superseded"; i-- {
					r := hist[i]
					msg, kind, gv := removedAPIIn([]string{r.Description})
					if msg == "" || staleMessage(hist, gv, kind) {
						continue
					}
					newest := hist[len(hist)-1]
					key := bundleKeyFor(c, r.Name)
					add(key, func() finding.Finding {
						f := ctx.New("api/removed", c, ref("v1", "Secret", newest.Namespace, newest.SecretName), removedSummary(fmt.Sprintf("Helm release %s/%s", r.Namespace, r.Name), c.Name, kind, gv))
						f.Keys = releaseKeys(ctx.Snap, c, newest)
						f.Since = timePtr(r.Since())
						f.Signature = "api-removed|" + genericBundle(r.Name) + "|" + kind + "|" + gv
						f.Vars = map[string]string{"namespace": r.Namespace, "release": r.Name, "group-version": gv, "revision": strconv.Itoa(newest.Revision), "kind": kind}
						// What the table knows of the API Helm's message names (the manifest's
						// own documents, when read, fill the rest).
						if rm, ok := removedapi.Lookup(gv, kind); ok {
							f.Vars["replacement"], f.Vars["review"] = rm.ReplacementAPIVersion(), rm.Review
							f.Vars["kubernetes-version"] = "v" + rm.RemovedIn
						}
						return f
					}, ev(sourceOf(c, ref("v1", "Secret", r.Namespace, r.SecretName)), "revision %s %s: %s", strconv.Itoa(r.Revision), r.Status, firstLine(msg)))
				}
			}
		}
		// What the manifests say: every revision of every release, every bundle.
		tg := newTargets(ctx)
		for _, c := range ctx.Snap.Clusters {
			releaseAPIFindings(ctx, tg, c, fs)
		}
		for _, m := range ctx.Snap.Management() {
			bundleAPIFindings(ctx, tg, m, fs)
		}
		return fs.list(), nil
	},
}

// apiFindings gathers api/ findings by key: the error messages and the manifests of one
// release or bundle make one finding, with evidence from both.
type apiFindings struct {
	byKey map[string]*apiHit
	order []string
}

type apiHit struct {
	f    finding.Finding
	seen map[string]bool
}

// add starts the finding of key with mk if there is none yet, and adds e to it (an empty e
// adds nothing); at most 6 quotes, one per source and text.
func (a *apiFindings) add(key string, mk func() finding.Finding, e finding.Evidence) {
	h := a.byKey[key]
	if h == nil {
		h = &apiHit{f: mk(), seen: map[string]bool{}}
		a.byKey[key] = h
		a.order = append(a.order, key)
	}
	if e.Text == "" {
		return
	}
	if k := e.Source + "|" + e.Text; !h.seen[k] && len(h.f.Evidence) < 6 {
		h.seen[k] = true
		h.f.Evidence = append(h.f.Evidence, e)
	}
}

// setVars fills the Vars the finding of key lacks (or has empty) with vars.
func (a *apiFindings) setVars(key string, vars map[string]string) {
	h := a.byKey[key]
	if h == nil {
		return
	}
	if h.f.Vars == nil {
		h.f.Vars = map[string]string{}
	}
	for k, v := range vars {
		if h.f.Vars[k] == "" {
			h.f.Vars[k] = v
		}
	}
}

func (a *apiFindings) list() []finding.Finding {
	sort.Strings(a.order)
	out := make([]finding.Finding, 0, len(a.order))
	for _, k := range a.order {
		out = append(out, a.byKey[k].f)
	}
	return out
}

// removedAPIIn returns the first message that classifies as api/removed, with the kind and
// built-in group/version it names (empty when the message does not name them).
func removedAPIIn(msgs []string) (msg, kind, gv string) {
	for _, m := range msgs {
		if c, ok := classify.Classify(m, classify.Status); ok && c.ID == "api/removed" {
			kind, gv, _ = classify.RemovedAPI(m)
			return m, kind, gv
		}
	}
	return "", "", ""
}

func removedSummary(what, cluster, kind, gv string) string {
	api := "a built-in API version"
	if kind != "" {
		api = kind + " " + gv
		if in := classify.RemovedIn(kind, gv); in != "" {
			api += " (removed in Kubernetes " + in + ")"
		}
	}
	return fmt.Sprintf("%s on cluster %s uses %s, which the cluster no longer serves: its upgrades and rollbacks fail until the manifest uses a served version", what, cluster, api)
}

// releaseOf names the Helm release a BundleDeployment produced and, when the snapshot holds it
// (or it is the agent's own), its namespace; empty when unknown.
func releaseOf(s *snapshot.Snapshot, bd *snapshot.BundleDeployment, bundle string) (name, namespace string) {
	name = bundle
	if h := bd.Spec.Options.Helm; h != nil && h.ReleaseName != "" {
		name = h.ReleaseName
	}
	for _, c := range s.Clusters {
		for _, r := range c.HelmReleases {
			if r.Name == name {
				return name, r.Namespace
			}
		}
	}
	if fleet.IsAgentBundle(bundle) {
		return name, "cattle-fleet-system"
	}
	return name, ""
}

// staleMessage says a Helm message about a removed API no longer holds: every revision's
// manifest was read and none of their documents uses that apiVersion and kind any more (the
// stored manifests were rewritten since the upgrade failed; Helm's "current release manifest"
// may be any earlier revision). The message is history then; the manifests are what the next
// upgrade or rollback works from.
func staleMessage(hist []*helmrelease.Release, gv, kind string) bool {
	for _, r := range hist {
		if len(r.Docs) == 0 {
			return false
		}
		for _, d := range r.Docs {
			if d.APIVersion == gv && (kind == "" || d.Kind == kind) {
				return false
			}
		}
	}
	return true
}
