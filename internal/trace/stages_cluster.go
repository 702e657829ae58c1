package trace

import (
	"fmt"
	"sort"
	"strings"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// clusterRows are the BundleDeployment, release and rollout stages of each Bundle on each
// cluster it is deployed to, and a row for each cluster the Bundle wants but has no
// BundleDeployment for.
func clusterRows(s *snapshot.Snapshot, subj *Subject) []ClusterRow {
	var rows []ClusterRow
	for _, b := range subj.Bundles {
		bds := bundleDeployments(subj.Management, b)
		for _, bd := range bds {
			rows = append(rows, clusterRow(s, subj, b, bd))
		}
		if missing := int(b.Status.Summary.DesiredReady) - len(bds); missing > 0 {
			rows = append(rows, missingRow(b, missing))
		}
	}
	sort.SliceStable(rows, func(i, k int) bool {
		if rows[i].Cluster != rows[k].Cluster {
			return rows[i].Cluster < rows[k].Cluster
		}
		return rows[i].Bundle < rows[k].Bundle
	})
	return rows
}

func bundleDeployments(m *snapshot.Cluster, b *fleetv1.Bundle) []*snapshot.BundleDeployment {
	var out []*snapshot.BundleDeployment
	for _, bd := range m.BundleDeployments {
		if fleet.BundleName(bd) == b.Name && bd.Labels.Get(fleet.LabelBundleNamespace) == b.Namespace {
			out = append(out, bd)
		}
	}
	return out
}

func clusterRow(s *snapshot.Snapshot, subj *Subject, b *fleetv1.Bundle, bd *snapshot.BundleDeployment) ClusterRow {
	fc := bd.Labels.Get(fleet.LabelClusterNS) + "/" + bd.Labels.Get(fleet.LabelClusterName)
	down := s.ClusterForFleet(fc)
	row := ClusterRow{Cluster: bd.Labels.Get(fleet.LabelClusterName), FleetCluster: fc, Bundle: b.Namespace + "/" + b.Name, commit: b.Labels[fleet.LabelCommit]}
	if down != nil {
		row.Cluster = down.Name
	} else if n := displayName(subj.Management, fc); n != "" {
		row.Cluster = n
	}
	rel := releaseName(bd)
	row.Stages = []Stage{bdStage(subj, bd), releaseStage(down, rel), rolloutStage(down, rel)}
	if down != nil {
		row.Stages[2].refs = append(row.Stages[2].refs, deployedRefs(subj.Management, down, b, rel)...)
	}
	return row
}

// deployedRefs are the objects the Bundle and its release deploy on cluster c (by identity,
// from the Bundle's and the release's manifests): a finding about one of them, such as a CRD
// the cluster cannot serve, is about this change's rollout.
func deployedRefs(m, c *snapshot.Cluster, b *fleetv1.Bundle, release string) []objKey {
	var out []objKey
	for _, d := range m.BundleDocs[b.Namespace+"/"+b.Name] {
		out = append(out, objKey{c.Name, d.Kind, d.Namespace, d.Name})
	}
	if r := latestRelease(c, release); r != nil {
		for _, d := range r.Docs {
			ns := d.Namespace
			out = append(out, objKey{c.Name, d.Kind, ns, d.Name}, objKey{c.Name, d.Kind, r.Namespace, d.Name})
		}
	}
	return out
}

func missingRow(b *fleetv1.Bundle, n int) ClusterRow {
	st := Stage{Name: StageDeployment, Status: Waiting,
		Detail: fmt.Sprintf("%d of the %d clusters the Bundle targets have no BundleDeployment", n, b.Status.Summary.DesiredReady),
		refs:   []objKey{{"", "Bundle", b.Namespace, b.Name}}}
	return ClusterRow{Cluster: fmt.Sprintf("(%d without a BundleDeployment)", n), Bundle: b.Namespace + "/" + b.Name,
		Stages: []Stage{st, {Name: StageRelease, Status: NotRead}, {Name: StageRollout, Status: NotRead}}}
}

// displayName is the name Rancher shows for Fleet Cluster namespace/name (its
// management.cattle.io/cluster-display-name label), for a cluster that was not read.
func displayName(m *snapshot.Cluster, nsName string) string {
	for _, fc := range m.FleetClusters {
		if fc.Namespace+"/"+fc.Name == nsName {
			return fc.Labels[snapshot.LabelRancherDisplayName]
		}
	}
	return ""
}

// releaseName is the Helm release a BundleDeployment deploys: its releaseName option, else
// the Bundle's name (Fleet's default).
func releaseName(bd *snapshot.BundleDeployment) string {
	if h := bd.Spec.Options.Helm; h != nil && h.ReleaseName != "" {
		return h.ReleaseName
	}
	return fleet.BundleName(bd)
}

// bdStage: the agent applied the deployment the controller wants (appliedDeploymentID =
// deploymentID = stagedDeploymentID) for the commit followed, read from the
// BundleDeployment's spec, status and Deployed condition. (Which commit a BundleDeployment
// deploys is its Bundle's: the rows of a Bundle still at another commit are marked so.)
func bdStage(subj *Subject, bd *snapshot.BundleDeployment) Stage {
	st := Stage{Name: StageDeployment, Objects: []string{"BundleDeployment/" + bd.Namespace + "/" + bd.Name},
		refs: []objKey{{subj.Management.Name, "BundleDeployment", bd.Namespace, bd.Name}}}
	state := fleet.BDState(bd)
	deployed := fleet.Condition(bd.Status.Conditions, "Deployed")
	switch state {
	case fleet.StateErrApplied:
		st.Status, st.At = Failed, condTime(deployed)
		st.Detail = "ErrApplied: " + firstLine(deployed.Message)
	case fleet.StateWaitApplied:
		st.Status = Waiting
		st.Detail = "WaitApplied: appliedDeploymentID " + orNone(shortID(bd.Status.AppliedDeploymentID)) + " ≠ deploymentID " + shortID(bd.Spec.DeploymentID)
	case fleet.StateOutOfSync:
		st.Status = Waiting
		st.Detail = "OutOfSync: staged " + shortID(bd.Spec.StagedDeploymentID) + ", deployed " + shortID(bd.Spec.DeploymentID)
		if bd.Spec.Paused {
			st.Detail += " (paused)"
		}
	default:
		st.Status = Reached
		if deployed != nil {
			st.At = condTime(deployed)
		}
		st.Detail = state + " at deploymentID " + shortID(bd.Spec.DeploymentID)
	}
	return st
}

// shortID is a deploymentID ("s-<content hash>:<options hash>") cut to its content hash's
// first characters.
func shortID(id string) string {
	c, _, _ := strings.Cut(id, ":")
	if len(c) > 14 {
		return c[:14]
	}
	return c
}

// releaseStage: the release's newest revision is deployed, read from its release Secret
// (revision, status, info.last_deployed).
func releaseStage(c *snapshot.Cluster, name string) Stage {
	st := Stage{Name: StageRelease}
	if c == nil {
		st.Status, st.Detail = NotRead, "the cluster was not read"
		return st
	}
	r := latestRelease(c, name)
	if r == nil {
		st.Status, st.Detail = Waiting, "no Helm release "+name
		return st
	}
	st.Objects = []string{"Secret/" + r.Namespace + "/" + r.SecretName}
	st.refs = []objKey{{c.Name, "Secret", r.Namespace, r.SecretName}}
	st.Detail = fmt.Sprintf("%s/%s revision %d %s", r.Namespace, r.Name, r.Revision, r.Status)
	if r.ChartVersion != "" {
		st.Detail += " (" + r.Chart + " " + r.ChartVersion + ")"
	}
	switch r.Status {
	case helmrelease.StatusDeployed:
		st.Status, st.At = Reached, timePtr(r.LastDeployed)
	case helmrelease.StatusFailed:
		st.Status, st.At = Failed, timePtr(r.LastDeployed)
		st.Detail += ": " + firstLine(r.Description)
	default:
		st.Status = Waiting
		st.Detail += " since " + r.LastDeployed.UTC().Format(time.RFC3339)
	}
	return st
}

func latestRelease(c *snapshot.Cluster, name string) *helmrelease.Release {
	var best *helmrelease.Release
	for _, r := range c.HelmReleases {
		if r.Name == name && (best == nil || r.Revision > best.Revision) {
			best = r
		}
	}
	return best
}
