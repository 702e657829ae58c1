package check_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// resolveIn is what a resolver reads: the judged snapshot, the finding whose command holds
// the placeholder, and the command.
type resolveIn struct {
	snap *snapshot.Snapshot
	f    finding.Finding
	cmd  string
}

// resolver finds, in the input, the value a placeholder stands for; "" when the input does
// not hold it. Resolvers read the snapshot their own way, not through the code that fills
// the commands, so a value that code misses is caught.
type resolver func(resolveIn) string

// operatorChoice is a placeholder only the operator can fill: a value to choose (a limit, a
// deadline, an image checked in a registry) or a file of their own.
func operatorChoice(resolveIn) string { return "" }

// placeholderResolvers names every placeholder a printed command may carry and how to find
// its value in the input. A placeholder missing here fails the test: each new one needs a
// decision.
var placeholderResolvers = map[string]resolver{
	"context":                func(resolveIn) string { return "" }, // a bundle that recorded no context
	"management-context":     resolveManagementContext,
	"namespace":              resolveNamespace,
	"fleet-namespace":        func(in resolveIn) string { ns, _, _ := strings.Cut(fleetClusterOf(in), "/"); return ns },
	"cluster":                func(in resolveIn) string { _, n, _ := strings.Cut(fleetClusterOf(in), "/"); return n },
	"n+1":                    resolveGeneration,
	"gitrepo":                resolveGitRepo,
	"bundle":                 func(in resolveIn) string { return bdLabel(in, "fleet.cattle.io/bundle-name") },
	"content":                resolveContent,
	"deployment":             resolveDeployment,
	"node":                   resolveNode,
	"plan":                   resolvePlan,
	"job":                    resolveJob,
	"serviceaccount":         resolveServiceAccount,
	"quota":                  evidenceMatch(regexp.MustCompile(`(?:exceeded|failed) quota: ([a-z0-9.-]+)`)),
	"resource":               evidenceMatch(regexp.MustCompile(`exceeded quota: [a-z0-9.-]+, requested: ([a-z.]+)=`)),
	"key":                    evidenceMatch(regexp.MustCompile(`(?:untolerated )?taint\(?s?\)? \{([^:}]+):`)),
	"name":                   evidenceMatch(regexp.MustCompile(`configmap \\?"([a-z0-9.-]+)\\?" not found`)),
	"webhook":                resolveWebhookConfiguration,
	"service":                evidenceMatch(regexp.MustCompile(`(?:https://|service \\?")([a-z0-9-]+)`)),
	"revision":               resolveRevision,
	"last-deployed-revision": resolveLastDeployed,
	"version":                resolveFleetVersion,
	"fleet-version":          func(in resolveIn) string { in.cmd = "fleet-crd"; return resolveFleetVersion(in) },
	"cluster-namespace":      resolveClusterNamespace,
	"crd-release":            resolveCRDRelease,

	"secret": operatorChoice, "docker-config-file": operatorChoice, "seconds": operatorChoice,
	"limit": operatorChoice, "value": operatorChoice, "cpu-request": operatorChoice, "memory-request": operatorChoice,
	"existing-image": operatorChoice, "verified-image": operatorChoice, "verified-kubectl-image": operatorChoice,
	"mirrored-image": operatorChoice, "multi-arch-image": operatorChoice, "image": operatorChoice,
	"digest": operatorChoice, "fleet-crd-chart": operatorChoice, "chart": operatorChoice, "file": operatorChoice,
}

var placeholderIn = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9+.\-]*)>`)

// Every placeholder left in a printed command is one the input does not hold: what the
// snapshot says (an object's namespace, a Job's node, the quota an event names, the
// generation an object carries) is filled in, on every command of every incident of every
// scenario and of the example.
func TestNoPlaceholderTheInputFills(t *testing.T) {
	seen := map[string]bool{}
	for _, j := range judgeAll(t) {
		eachCommand(j.rep, func(_ finding.Incident, f finding.Finding, cmd string) {
			for _, m := range placeholderIn.FindAllStringSubmatch(cmd, -1) {
				name := m[1]
				seen[name] = true
				r, ok := placeholderResolvers[name]
				if !ok {
					t.Errorf("%s: %s: placeholder <%s> has no resolver: say how the input holds its value, or that it is the operator's choice\n  %s", j.name, f.ID, name, cmd)
					continue
				}
				if v := r(resolveIn{snap: j.snap, f: f, cmd: cmd}); v != "" {
					t.Errorf("%s: %s: <%s> is left though the input holds %q\n  %s", j.name, f.ID, name, v, cmd)
				}
			}
		})
	}
	if len(seen) == 0 {
		t.Fatal("no placeholder in any command: the walk reads nothing")
	}
}

func clusterOf(in resolveIn) *snapshot.Cluster { return in.snap.Cluster(in.f.Cluster) }

func subjectOf(in resolveIn) *snapshot.Cluster {
	if in.f.Affects != "" {
		return in.snap.Cluster(in.f.Affects)
	}
	return clusterOf(in)
}

func objectOf(in resolveIn) any {
	c := clusterOf(in)
	if c == nil {
		return nil
	}
	o := in.f.Object
	return c.GetRef(o.APIVersion, o.Kind, o.Namespace, o.Name)
}

func evidenceMatch(re *regexp.Regexp) resolver {
	return func(in resolveIn) string {
		for _, e := range in.f.Evidence {
			if m := re.FindStringSubmatch(e.Text); m != nil {
				return m[1]
			}
		}
		return ""
	}
}

// fleetClusterOf is the Fleet Cluster (namespace/name) of the cluster a finding is about: the
// one it was matched to, or the one its BundleDeployment's labels name.
func fleetClusterOf(in resolveIn) string {
	if c := subjectOf(in); c != nil && c.FleetCluster != "" {
		return c.FleetCluster
	}
	if ns, n := bdLabel(in, "fleet.cattle.io/cluster-namespace"), bdLabel(in, "fleet.cattle.io/cluster"); ns != "" && n != "" {
		return ns + "/" + n
	}
	return ""
}

func resolveManagementContext(in resolveIn) string {
	ms := in.snap.Management()
	if len(ms) == 1 {
		return ms[0].Name
	}
	if fc := fleetClusterOf(in); fc != "" {
		for _, m := range ms {
			for _, x := range m.FleetClusters {
				if x.Namespace+"/"+x.Name == fc {
					return m.Name
				}
			}
		}
	}
	return ""
}

func bundleDeployment(in resolveIn) *snapshot.BundleDeployment {
	if in.f.Object.Kind != "BundleDeployment" {
		return nil
	}
	bd, _ := objectOf(in).(*snapshot.BundleDeployment)
	return bd
}

func bdLabel(in resolveIn, key string) string {
	if bd := bundleDeployment(in); bd != nil {
		return bd.Labels.Get(key)
	}
	return ""
}

func resolveNamespace(in resolveIn) string {
	if in.f.Object.Kind != "BundleDeployment" {
		return in.f.Object.Namespace
	}
	return "" // where a bundle's resources live: the slim BundleDeployment does not keep it
}

// resolveGeneration finds the object a generation bump patches: the Fleet Cluster, Bundle or
// GitRepo named (not a placeholder) in the command.
var patchTarget = regexp.MustCompile(`-n (\S+) patch (clusters|bundles|gitrepos)\.fleet\.cattle\.io (\S+)`)

func resolveGeneration(in resolveIn) string {
	m := patchTarget.FindStringSubmatch(in.cmd)
	if m == nil || strings.HasPrefix(m[1], "<") || strings.HasPrefix(m[3], "<") {
		return ""
	}
	for _, c := range in.snap.Clusters {
		if c.GetRef("fleet.cattle.io/v1alpha1", kindOfResource[m[2]], m[1], m[3]) != nil {
			return "generation of " + m[2] + " " + m[1] + "/" + m[3]
		}
	}
	return ""
}

var kindOfResource = map[string]string{"clusters": "Cluster", "bundles": "Bundle", "gitrepos": "GitRepo"}

func resolveGitRepo(in resolveIn) string {
	ns, name := bdLabel(in, "fleet.cattle.io/bundle-namespace"), bdLabel(in, "fleet.cattle.io/bundle-name")
	for _, c := range in.snap.Clusters {
		for _, b := range c.Bundles {
			if b.Namespace == ns && b.Name == name {
				return b.Labels["fleet.cattle.io/repo-name"]
			}
		}
	}
	return ""
}

var contentLabel = regexp.MustCompile(`contents\.fleet\.cattle\.io \\?"(s-[0-9a-f]+)\\?" not found`)

func resolveContent(in resolveIn) string {
	if bd := bundleDeployment(in); bd != nil && bd.Spec.DeploymentID != "" {
		id, _, _ := strings.Cut(bd.Spec.DeploymentID, ":")
		return id
	}
	return evidenceMatch(contentLabel)(in)
}

func podOf(in resolveIn) *corev1.Pod {
	p, _ := objectOf(in).(*corev1.Pod)
	return p
}

func resolveDeployment(in resolveIn) string {
	p, c := podOf(in), clusterOf(in)
	if p == nil {
		return ""
	}
	for _, o := range p.OwnerReferences {
		rs, _ := c.Get("ReplicaSet", p.Namespace, o.Name).(*appsv1.ReplicaSet)
		if o.Kind != "ReplicaSet" || rs == nil {
			continue
		}
		for _, ro := range rs.OwnerReferences {
			if ro.Kind == "Deployment" {
				return ro.Name
			}
		}
	}
	return ""
}

func resolveNode(in resolveIn) string {
	switch o := objectOf(in).(type) {
	case *corev1.Pod:
		return o.Spec.NodeName
	case *batchv1.Job:
		return o.Labels["upgrade.cattle.io/node"]
	case *corev1.Node:
		return o.Name
	}
	return ""
}

func resolvePlan(in resolveIn) string {
	switch o := objectOf(in).(type) {
	case *batchv1.Job:
		return o.Labels[suc.LabelPlan]
	case *suc.Plan:
		return o.Name
	case *corev1.Node:
		var plans []string
		for k := range o.Labels {
			if p, ok := strings.CutPrefix(k, "plan.upgrade.cattle.io/"); ok {
				plans = append(plans, p)
			}
		}
		if len(plans) == 1 {
			return plans[0]
		}
	}
	return ""
}

// resolveJob is the finding's own Job, or the only upgrade Job of its Plan.
func resolveJob(in resolveIn) string {
	switch o := objectOf(in).(type) {
	case *batchv1.Job:
		return o.Name
	case *suc.Plan:
		var jobs []string
		for _, j := range clusterOf(in).Jobs {
			if j.Namespace == o.Namespace && j.Labels[suc.LabelPlan] == o.Name {
				jobs = append(jobs, j.Name)
			}
		}
		if len(jobs) == 1 {
			return jobs[0]
		}
	}
	return ""
}

func resolveServiceAccount(in resolveIn) string {
	switch o := objectOf(in).(type) {
	case *corev1.Pod:
		return o.Spec.ServiceAccountName
	case *appsv1.Deployment:
		return o.Spec.Template.Spec.ServiceAccountName
	case *suc.Plan:
		return o.Spec.ServiceAccountName
	}
	return ""
}

var webhookDenial = regexp.MustCompile(`(?:admission webhook|failed calling webhook) \\?"([^"\\]+)\\?"`)

// resolveWebhookConfiguration is the webhook configuration in the input holding the webhook
// a denial names.
func resolveWebhookConfiguration(in resolveIn) string {
	hook := evidenceMatch(webhookDenial)(in)
	c := clusterOf(in)
	if hook == "" || c == nil {
		return ""
	}
	for _, o := range c.Other {
		if !strings.HasSuffix(o.Kind, "WebhookConfiguration") {
			continue
		}
		hooks, _ := o.Object["webhooks"].([]any)
		for _, h := range hooks {
			if m, _ := h.(map[string]any); m != nil && m["name"] == hook {
				return o.Name
			}
		}
	}
	return ""
}

var releaseSecret = regexp.MustCompile(`^sh\.helm\.release\.v1\.(.+)\.v([0-9]+)$`)

// history is the stored revisions of the release a finding's Secret belongs to, and the
// finding's own revision.
func history(in resolveIn) (revs map[int]string, own int) {
	m := releaseSecret.FindStringSubmatch(in.f.Object.Name)
	c := clusterOf(in)
	if m == nil || c == nil {
		return nil, 0
	}
	own, _ = strconv.Atoi(m[2])
	revs = map[int]string{}
	for _, r := range c.Releases(in.f.Object.Namespace, m[1]) {
		revs[r.Revision] = r.Status
	}
	return revs, own
}

// resolveRevision is a revision to roll back to that Helm still stores: the newest before the
// finding's own.
func resolveRevision(in resolveIn) string {
	revs, own := history(in)
	for r := own - 1; r > 0; r-- {
		if _, ok := revs[r]; ok {
			return strconv.Itoa(r)
		}
	}
	return ""
}

func resolveLastDeployed(in resolveIn) string {
	revs, own := history(in)
	for r := own - 1; r > 0; r-- {
		if revs[r] == "deployed" {
			return strconv.Itoa(r)
		}
	}
	return ""
}

// resolveFleetVersion is the Fleet version the fleet-controller runs, for a fleet-crd upgrade.
func resolveFleetVersion(in resolveIn) string {
	if !strings.Contains(in.cmd, "fleet-crd") {
		return ""
	}
	for _, m := range in.snap.Management() {
		if d, _ := m.Get("Deployment", "cattle-fleet-system", "fleet-controller").(*appsv1.Deployment); d != nil {
			return d.Spec.Template.Spec.Containers[0].Image
		}
	}
	return ""
}

// resolveClusterNamespace is the per-cluster namespace on the management cluster the Fleet
// Cluster of the finding's cluster records (status.namespace).
func resolveClusterNamespace(in resolveIn) string {
	if bd := bundleDeployment(in); bd != nil {
		return bd.Namespace
	}
	fc := fleetClusterOf(in)
	for _, m := range in.snap.Management() {
		for _, x := range m.FleetClusters {
			if x.Namespace+"/"+x.Name == fc {
				return x.Status.Namespace
			}
		}
	}
	return ""
}

// resolveCRDRelease is the Helm release that installs a missing CRD: the input holds it only
// for Fleet's own CRDs (the fleet-crd chart); another group's CRD is missing, so nothing in
// the input says which release would install it.
func resolveCRDRelease(in resolveIn) string {
	if strings.Contains(in.f.Summary, ".fleet.cattle.io") {
		return "fleet-crd"
	}
	return ""
}
