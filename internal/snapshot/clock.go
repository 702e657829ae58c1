package snapshot

import (
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Where an evaluation time came from, for the report.
const (
	ClockRecorded = "recorded" // the source said when it read the objects (live, or unstick-bundle.yaml)
	ClockNewest   = "newest"   // the newest timestamp of the bundle's objects, outliers left out
	// ClockLive: read from live clusters just now. A --now before it is a deliberate
	// replay of another time (tests replay bundles into API servers), so clocks are then
	// compared with --now.
	ClockLive = "live"
)

// IgnoredTime is a timestamp left out of the evaluation time because it stands far beyond
// the rest of the bundle (one Event stamped in 2099 must not age every release by decades).
type IgnoredTime struct {
	Time  time.Time `json:"time"`
	Where string    `json:"where"`
}

// outlierGap is how far the newest timestamps must stand from the rest to be left out, and
// outlierShare the largest share of a bundle's timestamps that may be left out: a whole
// cluster whose clock runs ahead is not an outlier but clock skew, which the checks report.
const (
	outlierGap    = 24 * time.Hour
	outlierShare  = 100 // at most 1 in 100 (and at least one) timestamps
	minForOutlier = 3   // with fewer timestamps there is no "rest" to compare with
)

type stamp struct {
	t     time.Time
	c     *Cluster
	what  string // kind/namespace/name and field, built only for ignored stamps
	field string
}

func (s stamp) where() string {
	return fmt.Sprintf("%s: %s %s", s.c.Name, s.what, s.field)
}

// robustNewest is a bundle's evaluation time when nothing recorded it: the newest timestamp
// of its objects (events, conditions, container states, Helm records), after leaving out
// the few that stand more than outlierGap beyond all the others. Node heartbeats and agent
// check-ins are other clocks: used only when nothing else is stamped, and never allowed to
// move the time on their own. It also returns what it left out.
func robustNewest(s *Snapshot) (time.Time, []IgnoredTime) {
	var objs, clocks []stamp
	see := func(list *[]stamp, t time.Time, c *Cluster, what, field string) {
		if !t.IsZero() {
			*list = append(*list, stamp{t: t, c: c, what: what, field: field})
		}
	}
	for _, c := range s.Clusters {
		for _, e := range c.Events {
			see(&objs, EventTime(e), c, "Event "+e.Namespace+"/"+e.Name, "lastTimestamp")
		}
		for _, p := range c.Pods {
			what := "Pod " + p.Namespace + "/" + p.Name
			see(&objs, p.CreationTimestamp.Time, c, what, "creationTimestamp")
			for _, cond := range p.Status.Conditions {
				see(&objs, cond.LastTransitionTime.Time, c, what, string(cond.Type)+" lastTransitionTime")
			}
			for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
				if cs.State.Running != nil {
					see(&objs, cs.State.Running.StartedAt.Time, c, what, cs.Name+" startedAt")
				}
				if cs.State.Terminated != nil {
					see(&objs, cs.State.Terminated.FinishedAt.Time, c, what, cs.Name+" finishedAt")
				}
				if cs.LastTerminationState.Terminated != nil {
					see(&objs, cs.LastTerminationState.Terminated.FinishedAt.Time, c, what, cs.Name+" lastState finishedAt")
				}
			}
		}
		for _, fc := range c.FleetClusters {
			what := "Cluster " + fc.Namespace + "/" + fc.Name
			see(&clocks, fc.Status.Agent.LastSeen.Time, c, what, "status.agent.lastSeen")
			for _, cond := range fc.Status.Conditions {
				see(&objs, parseTime(cond.LastUpdateTime), c, what, cond.Type+" lastUpdateTime")
				see(&objs, parseTime(cond.LastTransitionTime), c, what, cond.Type+" lastTransitionTime")
			}
		}
		for _, bd := range c.BundleDeployments {
			what := "BundleDeployment " + bd.Namespace + "/" + bd.Name
			for _, cond := range bd.Status.Conditions {
				see(&objs, parseTime(cond.LastUpdateTime), c, what, cond.Type+" lastUpdateTime")
				see(&objs, parseTime(cond.LastTransitionTime), c, what, cond.Type+" lastTransitionTime")
			}
		}
		for _, r := range c.HelmReleases {
			what := fmt.Sprintf("Helm release %s/%s revision %d", r.Namespace, r.Name, r.Revision)
			see(&objs, r.LastDeployed, c, what, "last_deployed")
			see(&objs, r.ModifiedAt, c, what, "modifiedAt")
		}
		for _, n := range c.Nodes {
			for _, cond := range n.Status.Conditions {
				see(&clocks, cond.LastHeartbeatTime.Time, c, "Node "+n.Name, string(cond.Type)+" lastHeartbeatTime")
			}
		}
		for _, d := range c.Deployments {
			what := "Deployment " + d.Namespace + "/" + d.Name
			for _, cond := range d.Status.Conditions {
				see(&objs, cond.LastUpdateTime.Time, c, what, string(cond.Type)+" lastUpdateTime")
			}
		}
	}
	if len(objs) == 0 {
		objs = clocks
	}
	return newestWithoutOutliers(objs)
}

func newestWithoutOutliers(st []stamp) (time.Time, []IgnoredTime) {
	if len(st) == 0 {
		return time.Time{}, nil
	}
	sort.SliceStable(st, func(i, j int) bool { return st[i].t.After(st[j].t) })
	cut := 0
	if len(st) >= minForOutlier {
		allowed := max(1, len(st)/outlierShare)
		for i := 0; i < allowed && i+1 < len(st); i++ {
			if st[i].t.Sub(st[i+1].t) > outlierGap {
				cut = i + 1
			}
		}
	}
	var ignored []IgnoredTime
	for _, x := range st[:cut] {
		ignored = append(ignored, IgnoredTime{Time: x.t.UTC(), Where: x.where()})
	}
	slices.SortStableFunc(ignored, func(a, b IgnoredTime) int { return a.Time.Compare(b.Time) })
	return st[cut].t, ignored
}
