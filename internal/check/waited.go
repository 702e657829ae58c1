package check

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// awaitWorkloads keys f to the workloads the Helm wait quoted in msg timed out on
// (waitedWorkloadKeys) and marks them awaited, so that their pods' findings rank before it.
func awaitWorkloads(f *finding.Finding, c *snapshot.Cluster, msg string) {
	keys := waitedWorkloadKeys(c, msg)
	f.Keys = append(f.Keys, keys...)
	f.Awaits = append(f.Awaits, keys...)
}

// waitedWorkloadKeys ties a Helm wait that timed out to the workloads it waited for, so that
// their pods' findings (unschedulable, crash-looping, image pulls failing) join its incident
// as its cause. Helm 4.1.1 and later name each resource still not ready with its namespace;
// Helm 4.0 names it without: then the workload of that kind and name on cluster c, when only
// one namespace has one. Helm 3's bare "timed out waiting for the condition" names none.
func waitedWorkloadKeys(c *snapshot.Cluster, msg string) []string {
	w, ok := messages.ParseWaitTimeout(msg)
	if !ok || c == nil {
		return nil
	}
	var keys []string
	for _, r := range w.NotReady {
		ns := r.Namespace
		if ns == "" {
			ns = workloadNamespace(c, r.Kind, r.Name)
		}
		if ns != "" && workloadKind(r.Kind) {
			keys = append(keys, WorkloadKey(c.Name, ns, r.Name))
		}
	}
	return keys
}

// workloadKind says whether pods carry a workload key of this kind (podKeys: their top owner).
func workloadKind(kind string) bool {
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet", "Job":
		return true
	}
	return false
}

func workloadNamespace(c *snapshot.Cluster, kind, name string) string {
	var found []string
	for _, o := range workloadsOfKind(c, kind) {
		if o.Name == name {
			found = append(found, o.Namespace)
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

type nsName struct{ Namespace, Name string }

func workloadsOfKind(c *snapshot.Cluster, kind string) []nsName {
	var out []nsName
	switch kind {
	case "Deployment":
		for _, d := range c.Deployments {
			out = append(out, nsName{d.Namespace, d.Name})
		}
	case "StatefulSet":
		for _, s := range c.StatefulSets {
			out = append(out, nsName{s.Namespace, s.Name})
		}
	case "DaemonSet":
		for _, d := range c.DaemonSets {
			out = append(out, nsName{d.Namespace, d.Name})
		}
	case "Job":
		for _, j := range c.Jobs {
			out = append(out, nsName{j.Namespace, j.Name})
		}
	}
	return out
}

// waitedWorkloads are the workloads a Helm wait timed out on, anywhere in the snapshot: named
// by a failed release's description or by a BundleDeployment's condition. Their pods are
// judged wherever they run, since their failure is why the release or bundle is stuck.
func waitedWorkloads(s *snapshot.Snapshot) map[string]bool {
	out := map[string]bool{}
	for _, c := range s.Clusters {
		for _, r := range newestRevisions(c) {
			if r.Status == helmrelease.StatusFailed {
				for _, k := range waitedWorkloadKeys(c, r.Description) {
					out[k] = true
				}
			}
		}
	}
	for _, m := range s.Management() {
		ix := newFleetIndex(m)
		for _, bd := range m.BundleDeployments {
			if fc := ix.forBD(m, bd); fc != nil && fleet.BDState(bd) != fleet.StateReady {
				for _, k := range waitedWorkloadKeys(s.Cluster(clusterName(s, fc)), bdMessage(bd)) {
					out[k] = true
				}
			}
		}
	}
	return out
}

// judgedPod says whether a pod's failures are reported: it is part of the upgrade machinery
// (watchedPod), or a Helm wait timed out on its workload.
func judgedPod(c *snapshot.Cluster, p *corev1.Pod, waited map[string]bool) bool {
	if watchedPod(p) {
		return true
	}
	_, owner := podOwner(c, p)
	return owner != "" && waited[WorkloadKey(c.Name, p.Namespace, owner)]
}

// newestRevisions is the newest revision of each Helm release on c.
func newestRevisions(c *snapshot.Cluster) map[string]*helmrelease.Release {
	out := map[string]*helmrelease.Release{}
	for _, r := range c.HelmReleases {
		k := r.Namespace + "/" + r.Name
		if o := out[k]; o == nil || r.Revision > o.Revision {
			out[k] = r
		}
	}
	return out
}

// awaits says whether waiter waited for a workload that f is about: f holds the workload's
// key without waiting for it itself (a bundle and its release both waiting for one
// Deployment are not each other's cause).
func awaits(waiter, f finding.Finding) bool {
	for _, k := range waiter.Awaits {
		if slices.Contains(f.Keys, k) && !slices.Contains(f.Awaits, k) {
			return true
		}
	}
	return false
}
