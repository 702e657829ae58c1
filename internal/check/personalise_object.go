package check

import (
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// objectFacts fill what a finding's own object records beyond its name: a pod's node and
// service account, an upgrade Job's node and Plan, a Plan's only Job, a node's only Plan
// label, a BundleDeployment's Content, and the revision a release can roll back to.
func objectFacts(ix *snapIndex, f *finding.Finding) map[string]string {
	v := map[string]string{}
	c := ix.snap.Cluster(f.Cluster)
	if c == nil {
		return v
	}
	o := f.Object
	switch x := c.GetRef(o.APIVersion, o.Kind, o.Namespace, o.Name).(type) {
	case *corev1.Pod:
		v["node"], v["serviceaccount"] = x.Spec.NodeName, x.Spec.ServiceAccountName
	case *appsv1.Deployment:
		v["serviceaccount"] = x.Spec.Template.Spec.ServiceAccountName
	case *batchv1.Job:
		v["node"], v["plan"] = x.Labels[suc.LabelNode], x.Labels[suc.LabelPlan]
	case *suc.Plan:
		v["serviceaccount"], v["job"] = x.Spec.ServiceAccountName, onlyJob(c, x)
	case *corev1.Node:
		v["plan"] = onlyPlanLabel(x)
	case *snapshot.BundleDeployment:
		v["content"], _, _ = strings.Cut(x.Spec.DeploymentID, ":")
	case *corev1.Secret:
		v["revision"] = earlierRevision(c, x)
	}
	return v
}

// onlyJob is the upgrade Job of a Plan when it has exactly one.
func onlyJob(c *snapshot.Cluster, p *suc.Plan) string {
	name := ""
	for _, j := range c.Jobs {
		if j.Namespace == p.Namespace && j.Labels[suc.LabelPlan] == p.Name {
			if name != "" {
				return ""
			}
			name = j.Name
		}
	}
	return name
}

// onlyPlanLabel is the Plan a node's plan.upgrade.cattle.io/<plan> label names, when it
// carries exactly one.
func onlyPlanLabel(n *corev1.Node) string {
	plan := ""
	for k := range n.Labels {
		if p, ok := strings.CutPrefix(k, "plan.upgrade.cattle.io/"); ok {
			if plan != "" {
				return ""
			}
			plan = p
		}
	}
	return plan
}

// earlierRevision is the newest revision Helm still stores before a release Secret's own:
// the one `helm rollback` can go back to.
func earlierRevision(c *snapshot.Cluster, s *corev1.Secret) string {
	rel := releaseName(s.Name)
	own, err := strconv.Atoi(s.Name[strings.LastIndex(s.Name, ".v")+2:])
	if rel == "" || err != nil {
		return ""
	}
	best := 0
	for _, r := range c.Releases(s.Namespace, rel) {
		if r.Revision < own && r.Revision > best {
			best = r.Revision
		}
	}
	if best == 0 {
		return ""
	}
	return strconv.Itoa(best)
}

// evidenceFacts are values the evidence quotes from Kubernetes' own messages: the
// ResourceQuota and resource a quota denial names, the ConfigMap a pod cannot find.
var evidenceFacts = []struct {
	name string
	re   func() *regexp.Regexp
}{
	{"quota", lazyre.New(`(?:exceeded|failed) quota: ([a-z0-9]([-a-z0-9.]*[a-z0-9])?)`)},
	{"resource", lazyre.New(`exceeded quota: [a-z0-9.-]+, requested: ([a-z][a-z0-9./-]*)=`)},
	{"name", lazyre.New(`configmap \\?"([a-z0-9]([-a-z0-9.]*[a-z0-9])?)\\?" not found`)},
}

func evidenceVars(f *finding.Finding) map[string]string {
	v := map[string]string{}
	for _, ef := range evidenceFacts {
		for _, e := range f.Evidence {
			if m := ef.re().FindStringSubmatch(e.Text); m != nil {
				v[ef.name] = m[1]
				break
			}
		}
	}
	return v
}

// noRollbackTarget says, for a helm rollback command whose revision is still a placeholder,
// that the release's history holds no revision it could go back to: no earlier one at all
// (<revision>), or no earlier deployed one (<last-deployed-revision>).
func noRollbackTarget(ix *snapIndex, f *finding.Finding, cmd string) (string, bool) {
	last := strings.Contains(cmd, "<last-deployed-revision>")
	if ix == nil || !strings.Contains(cmd, " rollback ") || !last && !strings.Contains(cmd, "<revision>") {
		return "", false
	}
	c := ix.snap.Cluster(f.Cluster)
	if c == nil {
		return "", false
	}
	s, _ := c.Get("Secret", f.Object.Namespace, f.Object.Name).(*corev1.Secret)
	if s == nil || c.Releases(s.Namespace, releaseName(s.Name)) == nil {
		return "", false
	}
	own, err := strconv.Atoi(s.Name[strings.LastIndex(s.Name, ".v")+2:])
	if err != nil {
		return "", false
	}
	for _, r := range c.Releases(s.Namespace, releaseName(s.Name)) {
		if r.Revision < own && (!last || r.Status == "deployed") {
			return "", false
		}
	}
	what := "no earlier revision"
	if last {
		what = "no earlier deployed revision"
	}
	return "Helm stores " + what + " of release " + s.Namespace + "/" + releaseName(s.Name) + " to roll back to", true
}
