package remediate

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/plural"
	"github.com/unstick-dev/unstick/internal/shellcmd"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Options narrow and shape a plan.
type Options struct {
	// MaxRisk caps what the executor may run (default Low); attempts above it are listed,
	// marked, and not run.
	MaxRisk Risk
	// Only keeps incidents with a finding of these IDs (an entry ending in "/" or "/*" is a
	// family); Clusters incidents with a finding on or about these clusters.
	Only     []string
	Clusters []string
	// Images are the references the operator chose for realign steps (--image); ImageFacts
	// what the registry said about them. A Plan image is only ever patched to a reference
	// the registry confirmed, for every platform of the Plan's nodes.
	Images     []ImageChoice
	ImageFacts map[string]imageref.Facts
}

// ImageChoice is one --image [[NAMESPACE/]PLAN:]STAGE=REF.
type ImageChoice struct {
	Namespace string `json:"namespace,omitempty"`
	Plan      string `json:"plan,omitempty"`
	Stage     string `json:"stage"`
	Ref       string `json:"ref"`
}

// ParseImageChoice reads [[NAMESPACE/]PLAN:]STAGE=REF, STAGE being upgrade or prepare.
func ParseImageChoice(s string) (ImageChoice, error) {
	sel, ref, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(ref) == "" {
		return ImageChoice{}, fmt.Errorf("%q: want STAGE=IMAGE (or PLAN:STAGE=IMAGE, NAMESPACE/PLAN:STAGE=IMAGE), e.g. upgrade=rancher/k3s-upgrade:v1.30.3-k3s1", s)
	}
	ic := ImageChoice{Ref: strings.TrimSpace(ref), Stage: sel}
	if plan, stage, ok := strings.Cut(sel, ":"); ok {
		ic.Stage = stage
		if ns, name, ok := strings.Cut(plan, "/"); ok {
			ic.Namespace, ic.Plan = ns, name
		} else {
			ic.Plan = plan
		}
	}
	if ic.Stage != "upgrade" && ic.Stage != "prepare" {
		return ImageChoice{}, fmt.Errorf("%q: stage %q is not one a Plan has an image for (want upgrade or prepare; the drain uses the controller's kubectl image)", s, ic.Stage)
	}
	if _, err := imageref.Parse(ic.Ref); err != nil {
		return ImageChoice{}, fmt.Errorf("%q: %v", s, err)
	}
	return ic, nil
}

// Input is what a plan is built from.
type Input struct {
	Snap      *snapshot.Snapshot
	Incidents []finding.Incident
	Options
}

// Build plans every incident the options keep. It is pure: the snapshot and the findings are
// all it reads.
func Build(in Input) *Plan {
	pl := &planner{snap: in.Snap, opts: in.Options, seen: map[string]bool{}}
	p := &Plan{SchemaVersion: SchemaVersion, MaxRisk: in.MaxRisk, Incidents: []IncidentPlan{}}
	for _, inc := range in.Incidents {
		if !pl.keep(inc) {
			continue
		}
		ip := pl.incident(inc)
		ip.Clusters, ip.NextStep = append([]string{}, inc.Clusters...), inc.NextStep
		if len(ip.Attempts) == 0 {
			r := inc.RootCause
			hint, ok := pl.hints[r.ID+"|"+r.Cluster+"|"+r.Object.String()]
			if !ok {
				hint = manualHint(inc)
			}
			p.Manual = append(p.Manual, Manual{Finding: ip.RootCause, Hint: hint, Clusters: ip.Clusters, NextStep: inc.NextStep})
			continue
		}
		p.Incidents = append(p.Incidents, ip)
	}
	return p
}

type planner struct {
	snap *snapshot.Snapshot
	opts Options
	seen map[string]bool // step IDs already planned (one step per change, whichever incident asks)
	// hints are what a rule that plans no step says the operator should do instead, by
	// root cause.
	hints map[string]string
}

func (pl *planner) keep(inc finding.Incident) bool {
	all := append([]finding.Finding{inc.RootCause}, inc.Symptoms...)
	if len(pl.opts.Only) > 0 {
		ok := false
		for _, f := range all {
			for _, o := range pl.opts.Only {
				o = strings.TrimSuffix(o, "*")
				if f.ID == o || strings.HasSuffix(o, "/") && strings.HasPrefix(f.ID, o) {
					ok = true
				}
			}
		}
		if !ok {
			return false
		}
	}
	if len(pl.opts.Clusters) > 0 {
		for _, f := range all {
			for _, c := range pl.opts.Clusters {
				if f.Cluster == c || f.Affects == c {
					return true
				}
			}
		}
		return false
	}
	return true
}

// incident plans one incident: the rules of its root cause, lowest risk first, after one
// observe step that saves the evidence of every finding in it.
func (pl *planner) incident(inc finding.Incident) IncidentPlan {
	root := inc.RootCause
	ip := IncidentPlan{
		ID:        stepID("incident", root.ID, root.Cluster, root.Object.String()),
		RootCause: reasonOf(root),
	}
	for _, s := range inc.Symptoms {
		ip.Symptoms = append(ip.Symptoms, reasonOf(s))
	}
	var atts []Attempt
	if rule := rules[root.ID]; rule != nil {
		atts = rule(pl, inc)
	}
	// One step per change: a restart or a Job deletion two incidents ask for is planned once.
	var kept []Attempt
	for _, a := range atts {
		var steps []Step
		for _, s := range a.Steps {
			if !pl.seen[s.ID] {
				steps = append(steps, s)
			}
		}
		if len(steps) == 0 {
			continue
		}
		for _, s := range steps {
			pl.seen[s.ID] = true
		}
		a.Steps = steps
		if a.Risk > pl.opts.MaxRisk {
			a.AboveMaxRisk = true
		}
		if w := withheldCommand(steps); w != "" && a.Blocked == "" {
			a.Blocked = "a value the step would write is not valid: " + strings.TrimPrefix(w, "# ")
		}
		kept = append(kept, a)
	}
	sort.SliceStable(kept, func(i, j int) bool {
		if kept[i].Risk != kept[j].Risk {
			return kept[i].Risk < kept[j].Risk
		}
		return rungOrder[kept[i].Rung] < rungOrder[kept[j].Rung]
	})
	if len(kept) == 0 {
		return ip
	}
	ip.Attempts = append([]Attempt{pl.observe(ip, inc, kept)}, kept...)
	return ip
}

// observe is the first rung: the incident's objects, their events and their pods' logs are
// saved to the backup directory before anything changes.
func (pl *planner) observe(ip IncidentPlan, inc finding.Incident, atts []Attempt) Attempt {
	var ev []Object
	seen := map[string]bool{}
	add := func(o Object) {
		if !seen[o.Key()] {
			seen[o.Key()] = true
			ev = append(ev, o)
		}
	}
	for _, f := range append([]finding.Finding{inc.RootCause}, inc.Symptoms...) {
		add(pl.object(f.Cluster, f.Object.APIVersion, f.Object.Kind, f.Object.Namespace, f.Object.Name))
	}
	for _, a := range atts {
		for _, s := range a.Steps {
			for _, o := range append(append([]Object{}, s.Touches...), s.Evidence...) {
				if !o.Create {
					add(o)
				}
			}
		}
	}
	root := inc.RootCause
	rationale := ""
	for _, r := range root.Remediation {
		if r.Rung == RungObserve {
			rationale = r.Action
			break
		}
	}
	s := Step{
		ID:           stepID(Observe, ip.ID),
		Action:       Observe,
		Rung:         RungObserve,
		Risk:         None,
		Cluster:      root.Cluster,
		Target:       pl.object(root.Cluster, root.Object.APIVersion, root.Object.Kind, root.Object.Namespace, root.Object.Name),
		Evidence:     ev,
		Change:       fmt.Sprintf("nothing: save %s, their events and their pods' last logs to the backup directory", plural.Of(len(ev), "object")),
		Why:          []Reason{reasonOf(root)},
		Rationale:    rationale,
		Precondition: "none",
		Verify:       "every object was read and written to the backup directory",
	}
	return Attempt{Rung: RungObserve, Risk: None, Steps: []Step{s}}
}

// object names an object of a snapshot cluster with the UID and resource version read.
func (pl *planner) object(cluster, apiVersion, kind, ns, name string) Object {
	o := Object{Cluster: cluster, APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}
	c := pl.snap.Cluster(cluster)
	if c == nil {
		return o
	}
	switch v := c.GetRef(apiVersion, kind, ns, name).(type) {
	case identified:
		o.UID, o.ResourceVersion = string(v.GetUID()), v.GetResourceVersion()
	case *snapshot.Unstructured:
		if md, ok := v.Object["metadata"].(map[string]any); ok {
			o.UID, _ = md["uid"].(string)
			o.ResourceVersion, _ = md["resourceVersion"].(string)
		}
	}
	return o
}

// identified is what a plan reads of a snapshot object to guard a change on it: Kubernetes'
// types and unstick's slim ones (snapshot.BundleDeployment) have it.
type identified interface {
	GetNamespace() string
	GetName() string
	GetUID() types.UID
	GetResourceVersion() string
}

func metaObject(cluster, apiVersion, kind string, m identified) Object {
	return Object{Cluster: cluster, APIVersion: apiVersion, Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(),
		UID: string(m.GetUID()), ResourceVersion: m.GetResourceVersion()}
}

// rung finds the catalogue rung of f's ladder (as the finding carries it, user overrides
// included) that does what match recognises in its commands. A command withheld because a
// value in it failed its rule offers nothing: unstick does not act where it would not print. The ladder decides whether an
// action is offered for a finding at all, and at what risk.
func rung(f finding.Finding, name string, match func(cmd string) bool) (finding.Step, Risk, bool) {
	for _, r := range f.Remediation {
		if r.Rung != name {
			continue
		}
		for _, c := range r.Commands {
			if !shellcmd.IsWithheld(c) && match(c) {
				risk, err := ParseRisk(r.Risk)
				if err != nil {
					risk = High // an unknown risk is treated as the highest
				}
				return r, risk, true
			}
		}
	}
	return finding.Step{}, 0, false
}

// Command signatures of the catalogue's ladders.
var (
	sigRedeploy      = contains("redeployAgentGeneration")
	sigForceSync     = contains("forceSyncGeneration")
	sigRestartAgent  = contains("rollout restart deployment/fleet-agent")
	sigRestartFleetC = contains("rollout restart deployment/fleet-controller")
	sigRestartSUC    = contains("rollout restart deployment/system-upgrade-controller")
	sigHelmRollback  = func(c string) bool { return strings.HasPrefix(c, "helm ") && strings.Contains(c, " rollback ") }
	sigMarkFailed    = contains("status=failed")
	sigPatchImage    = func(c string) bool {
		return strings.Contains(c, "patch plans.upgrade.cattle.io") && strings.Contains(c, `"image"`)
	}
	sigDeleteJob   = contains("delete job")
	sigRemoveLabel = func(c string) bool {
		return strings.Contains(c, "label node") && strings.Contains(c, "plan.upgrade.cattle.io/")
	}
	// Printed commands carry --context between kubectl and its verb.
	sigUncordon = func(c string) bool { return strings.HasPrefix(c, "kubectl ") && strings.Contains(c, " uncordon ") }
	sigDeleteBD = contains("delete bundledeployments")
	sigResync   = func(c string) bool { return sigRedeploy(c) || sigForceSync(c) }
)

// withheldCommand is the first command of steps that was withheld because a value in it
// failed its rule: unstick does not write what it would not print.
func withheldCommand(steps []Step) string {
	for _, s := range steps {
		for _, c := range s.Commands {
			if shellcmd.IsWithheld(c) {
				return c
			}
		}
	}
	return ""
}

func contains(s string) func(string) bool {
	return func(c string) bool { return strings.Contains(c, s) }
}

// manualHint is what the "no automatic fix" entry says when the rule says nothing of its own.
func manualHint(inc finding.Incident) string {
	if inc.NextStep != nil {
		return "unstick takes no step here on its own: take the next safe step by hand"
	}
	return fmt.Sprintf("unstick takes no step here on its own; follow `unstick explain %s`", inc.RootCause.ID)
}

func maxRisk(steps []Step) Risk {
	r := None
	for _, s := range steps {
		if s.Risk > r {
			r = s.Risk
		}
	}
	return r
}

func single(s Step) Attempt { return Attempt{Rung: s.Rung, Risk: s.Risk, Steps: []Step{s}} }

// rules plans an incident by the ID of its root cause. A rule reads the root cause's ladder
// (and, for SUC state repairs, the symptoms' ladders) from the findings themselves.
var rules = map[string]func(*planner, finding.Incident) []Attempt{
	"helm/release-pending":     (*planner).helmRelease,
	"helm/no-deployed-release": (*planner).helmRelease,
	"helm/release-failed":      (*planner).helmRelease,

	"fleet/agent-upgrade-stuck":   (*planner).agent,
	"fleet/agent-heartbeat-stale": (*planner).agent,
	"fleet/agent-version-skew":    (*planner).agent,
	"fleet/registration-broken":   (*planner).agent,
	"agent/api-unreachable":       (*planner).agent,
	"agent/config-invalid":        (*planner).agent,
	"agent/crd-missing":           (*planner).agent,
	"agent/rbac-forbidden":        (*planner).agent,
	"agent/tls":                   (*planner).agent,

	"fleet/bundle-err-applied":        (*planner).bundle,
	"fleet/bundle-modified":           (*planner).bundle,
	"fleet/bundle-not-ready":          (*planner).bundle,
	"fleet/bundle-wait-applied-stuck": (*planner).bundle,
	"fleet/content-missing":           (*planner).bundle,

	"suc/image-missing":           (*planner).sucImage,
	"suc/image-arch":              (*planner).sucImage,
	"suc/image-floating":          (*planner).sucImage,
	"suc/job-stale-spec":          (*planner).sucJob,
	"suc/job-deadline":            (*planner).sucJob,
	"suc/node-label-blocks-rerun": (*planner).sucState,
	"suc/node-left-cordoned":      (*planner).sucState,
	"suc/plan-stuck":              (*planner).sucState,

	"api/removed":            (*planner).apiRemoved,
	"api/removed-in-target":  (*planner).apiRemoved,
	"crd/version-not-served": (*planner).crdStorage,
}

// Rules lists the finding IDs the planner has rules for (root causes with automatic steps).
func Rules() []string {
	var out []string
	for id := range rules {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}
