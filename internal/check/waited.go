package check

import (
	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// waitedWorkloadKeys ties a Helm wait that timed out to the workloads it waited for, so that
// their pods' findings (unschedulable, crash-looping) join its incident as its cause. Helm 4
// names each resource still not ready, without its namespace: the workload of that kind and
// name on cluster c, when only one namespace has one. Helm 3's bare "timed out waiting for
// the condition" names none.
func waitedWorkloadKeys(c *snapshot.Cluster, msg string) []string {
	w, ok := messages.ParseWaitTimeout(msg)
	if !ok || c == nil {
		return nil
	}
	var keys []string
	for _, r := range w.NotReady {
		if ns := workloadNamespace(c, r.Kind, r.Name); ns != "" {
			keys = append(keys, WorkloadKey(c.Name, ns, r.Name))
		}
	}
	return keys
}

func workloadNamespace(c *snapshot.Cluster, kind, name string) string {
	var found []string
	switch kind {
	case "Deployment":
		for _, d := range c.Deployments {
			if d.Name == name {
				found = append(found, d.Namespace)
			}
		}
	case "DaemonSet":
		for _, d := range c.DaemonSets {
			if d.Name == name {
				found = append(found, d.Namespace)
			}
		}
	case "Job":
		for _, j := range c.Jobs {
			if j.Name == name {
				found = append(found, j.Namespace)
			}
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}
