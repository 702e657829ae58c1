package trace

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

const annotationRelease = "meta.helm.sh/release-name"

// workloadState is one workload of a release and whether its rollout finished.
type workloadState struct {
	ref    string
	key    objKey
	done   bool
	detail string
	at     *time.Time
}

// rolloutStage: every Deployment, DaemonSet and StatefulSet of the release (annotation
// meta.helm.sh/release-name) has rolled out, read from their status and, for Deployments,
// the Progressing condition's time.
func rolloutStage(c *snapshot.Cluster, release string) Stage {
	st := Stage{Name: StageRollout}
	if c == nil {
		st.Status, st.Detail = NotRead, "the cluster was not read"
		return st
	}
	ws := releaseWorkloads(c, release)
	if len(ws) == 0 {
		st.Status, st.Detail = None, "no Deployment, DaemonSet or StatefulSet of release "+release
		return st
	}
	st.Status = Reached
	var waiting []string
	for _, w := range ws {
		st.Objects = append(st.Objects, w.ref)
		st.refs = append(st.refs, w.key)
		if !w.done {
			st.Status = Waiting
			waiting = append(waiting, w.ref+": "+w.detail)
		} else if w.at != nil && (st.At == nil || w.at.After(*st.At)) {
			st.At = w.at
		}
	}
	if st.Status == Waiting {
		st.At = nil
		st.Detail = strings.Join(waiting, "; ")
		return st
	}
	st.Detail = fmt.Sprintf("%d %s rolled out", len(ws), plural(len(ws), "workload", "workloads"))
	return st
}

func releaseWorkloads(c *snapshot.Cluster, release string) []workloadState {
	var out []workloadState
	for _, d := range c.Deployments {
		if d.Annotations[annotationRelease] == release {
			out = append(out, deploymentState(c.Name, d))
		}
	}
	for _, d := range c.DaemonSets {
		if d.Annotations[annotationRelease] == release {
			out = append(out, daemonSetState(c.Name, d))
		}
	}
	for _, s := range c.StatefulSets {
		if s.Annotations[annotationRelease] == release {
			out = append(out, statefulSetState(c.Name, s))
		}
	}
	return out
}

func deploymentState(cluster string, d *appsv1.Deployment) workloadState {
	w := workloadState{ref: "Deployment/" + d.Namespace + "/" + d.Name, key: objKey{cluster, "Deployment", d.Namespace, d.Name}}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	w.done = s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas >= want && s.Replicas == want
	w.detail = fmt.Sprintf("%d/%d updated, %d available, %d in all (old ones not yet gone)", s.UpdatedReplicas, want, s.AvailableReplicas, s.Replicas)
	if s.Replicas <= want {
		w.detail = fmt.Sprintf("%d/%d updated, %d available", s.UpdatedReplicas, want, s.AvailableReplicas)
	}
	for _, cd := range s.Conditions {
		if cd.Type == appsv1.DeploymentProgressing && cd.Status == corev1.ConditionTrue {
			w.at = timePtr(cd.LastUpdateTime.Time)
		}
	}
	return w
}

func daemonSetState(cluster string, d *appsv1.DaemonSet) workloadState {
	w := workloadState{ref: "DaemonSet/" + d.Namespace + "/" + d.Name, key: objKey{cluster, "DaemonSet", d.Namespace, d.Name}}
	s := d.Status
	w.done = s.ObservedGeneration >= d.Generation && s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberAvailable == s.DesiredNumberScheduled
	w.detail = fmt.Sprintf("%d/%d updated, %d available", s.UpdatedNumberScheduled, s.DesiredNumberScheduled, s.NumberAvailable)
	return w
}

func statefulSetState(cluster string, ss *appsv1.StatefulSet) workloadState {
	w := workloadState{ref: "StatefulSet/" + ss.Namespace + "/" + ss.Name, key: objKey{cluster, "StatefulSet", ss.Namespace, ss.Name}}
	want := int32(1)
	if ss.Spec.Replicas != nil {
		want = *ss.Spec.Replicas
	}
	s := ss.Status
	w.done = s.ObservedGeneration >= ss.Generation && s.UpdatedReplicas == want && s.ReadyReplicas >= want &&
		(s.UpdateRevision == "" || s.CurrentRevision == s.UpdateRevision)
	w.detail = fmt.Sprintf("%d/%d updated, %d ready", s.UpdatedReplicas, want, s.ReadyReplicas)
	return w
}
