package execute

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/suc"
)

// upgraded says whether the Plan a step answers (Step.Upgrades) is done on every node it
// names, and if not, what each node still shows. It only reads.
func (e *Executor) upgraded(ctx context.Context, st remediate.Step) (bool, string, error) {
	ref := st.Upgrades
	cl, err := e.cluster(ctx, ref.Cluster)
	if err != nil {
		return false, "", err
	}
	plan, err := cl.read(ctx, remediate.Object{Cluster: ref.Cluster, APIVersion: suc.APIVersion, Kind: suc.Kind, Namespace: ref.Namespace, Name: ref.Plan})
	if err != nil {
		return false, "", fmt.Errorf("reading Plan %s/%s: %w", ref.Namespace, ref.Plan, err)
	}
	if plan == nil {
		return false, fmt.Sprintf("Plan %s/%s no longer exists", ref.Namespace, ref.Plan), nil
	}
	jobs, err := cl.planJobs(ctx, ref)
	if err != nil {
		return false, "", err
	}
	var pending []string
	for _, name := range ref.Nodes {
		node, err := cl.read(ctx, remediate.Object{Cluster: ref.Cluster, APIVersion: "v1", Kind: "Node", Name: name})
		if err != nil {
			return false, "", fmt.Errorf("reading node %s: %w", name, err)
		}
		if ok, why := nodeUpgraded(plan, name, node, newJobs(jobs, ref.Jobs)); !ok {
			pending = append(pending, why)
		}
	}
	if len(pending) == 0 {
		return true, "", nil
	}
	return false, fmt.Sprintf("Plan %s/%s on %s is not done: %s", ref.Namespace, ref.Plan, ref.Cluster, strings.Join(pending, "; ")), nil
}

// planJobs lists the Plan's Jobs (labelled upgrade.cattle.io/plan with its name).
func (c *cluster) planJobs(ctx context.Context, ref *remediate.PlanNodesRef) ([]unstructured.Unstructured, error) {
	h, err := c.handle(remediate.Object{Cluster: ref.Cluster, APIVersion: "batch/v1", Kind: "Job", Namespace: ref.Namespace})
	if err != nil {
		return nil, err
	}
	list, err := h.List(ctx, metav1.ListOptions{LabelSelector: suc.LabelPlan + "=" + ref.Plan})
	if err != nil {
		return nil, fmt.Errorf("listing the Jobs of Plan %s/%s: %w", ref.Namespace, ref.Plan, err)
	}
	return list.Items, nil
}

// newJobs leaves out the Jobs the plan read (their UIDs): a Job that ended before the steps
// is not their outcome.
func newJobs(jobs []unstructured.Unstructured, planned []string) []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for _, j := range jobs {
		if !slices.Contains(planned, string(j.GetUID())) {
			out = append(out, j)
		}
	}
	return out
}

// nodeUpgraded judges one node against the Plan read after a step: done when its plan label
// reads status.latestHash (what the system-upgrade-controller sets once the node's Job
// completes), or when a new Job of the Plan for the node at that hash is Complete (the label
// follows). A node absent (nil) is not done. Otherwise it says what the node and its newest
// Job show.
func nodeUpgraded(plan *unstructured.Unstructured, name string, node *unstructured.Unstructured, jobs []unstructured.Unstructured) (bool, string) {
	hash, _, _ := unstructured.NestedString(plan.Object, "status", "latestHash")
	if node == nil {
		return false, "node " + name + " does not exist"
	}
	key := suc.LabelPlanName(plan.GetName())
	label, has := node.GetLabels()[key]
	if hash != "" && has && label == hash {
		return true, ""
	}
	job := newestJob(jobs, name, key, hash)
	if job != nil && jobCondition(job, "Complete") != "" {
		return true, ""
	}
	shown := "absent"
	if has {
		shown = fmt.Sprintf("%q", label)
	}
	why := fmt.Sprintf("node %s: label %s is %s, the Plan's latestHash %s", name, key, shown, orUnset(hash))
	switch {
	case job == nil:
		why += "; no new Job for it (is the system-upgrade-controller running?)"
	case jobCondition(job, "Failed") != "":
		why += fmt.Sprintf("; Job %s failed: %s", job.GetName(), quote(jobCondition(job, "Failed")))
	default:
		why += fmt.Sprintf("; Job %s has not completed", job.GetName())
	}
	return false, why
}

// newestJob is the newest Job of the Plan for the node at the hash.
func newestJob(jobs []unstructured.Unstructured, node, key, hash string) *unstructured.Unstructured {
	var out *unstructured.Unstructured
	for i := range jobs {
		j := &jobs[i]
		l := j.GetLabels()
		if l[suc.LabelNode] != node || (hash != "" && l[key] != "" && l[key] != hash) {
			continue
		}
		if out == nil || j.GetCreationTimestamp().After(out.GetCreationTimestamp().Time) {
			out = j
		}
	}
	return out
}

// jobCondition is the reason and message of a Job's condition of that type when it is True
// ("" otherwise; "Complete" with neither says so).
func jobCondition(j *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(j.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != typ || m["status"] != "True" {
			continue
		}
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		if s := strings.TrimSpace(reason + ": " + msg); s != ":" {
			return strings.TrimSuffix(s, ":")
		}
		return typ
	}
	return ""
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}
