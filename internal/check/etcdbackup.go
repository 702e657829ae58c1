package check

import (
	"fmt"
	"sort"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// etcdBackups reports clusters whose newest successful etcd snapshot is older than
// cluster.etcdBackupMaxAge, the only full restore point when an upgrade goes wrong. Rancher
// records the snapshots of the RKE2/K3s clusters it provisions as rke.cattle.io ETCDSnapshot
// objects on the management cluster (snapshotFile.createdAt, snapshotFile.status
// "successful"/"failed", status.missing); RKE2/K3s record them as k3s.cattle.io
// ETCDSnapshotFile objects on the cluster itself (status.creationTime, status.readyToUse).
// Clusters without a record of either kind are not judged: hosted control planes and other
// distributions record none, and a bundle may simply not have collected them. A location
// (local, S3) whose newest record failed is rancher/etcd-snapshot-failing, upgrade or not: an
// S3 upload denied while local snapshots still succeed leaves no off-node restore point.
var etcdBackups = Check{
	Name:  "cluster/etcd-backup",
	Emits: []string{"cluster/etcd-backup-stale", "rancher/etcd-snapshot-failing"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		maxAge := ctx.Thresholds.Duration("cluster.etcdBackupMaxAge")
		judged := map[string]bool{} // downstream cluster names judged from Rancher's records
		for _, m := range ctx.Snap.Clusters {
			groups := map[string][]*snapshot.EtcdSnapshot{}
			var names []string
			for _, s := range m.EtcdSnapshots {
				if s.Kind != "ETCDSnapshot" || s.Cluster == "" {
					continue
				}
				k := s.Namespace + "/" + s.Cluster
				if groups[k] == nil {
					names = append(names, k)
				}
				groups[k] = append(groups[k], s)
			}
			sort.Strings(names)
			for _, k := range names {
				recs := groups[k]
				affects := recs[0].Cluster
				if sc := ctx.Snap.ClusterForFleet(recs[0].Namespace + "/" + recs[0].Cluster); sc != nil {
					affects = sc.Name
				}
				judged[affects] = true
				if f, ok := staleBackup(ctx, m, recs, affects, maxAge); ok {
					out = append(out, f)
				}
				for _, f := range failingLocations(ctx, m, recs, affects) {
					// Tie it to Rancher's upgrade of that cluster, if one is under way.
					f.Keys = append(f.Keys, "rancher:"+m.Name+"/"+recs[0].Namespace+"/"+recs[0].Cluster)
					out = append(out, f)
				}
			}
		}
		for _, c := range ctx.Snap.Clusters {
			if judged[c.Name] {
				continue
			}
			var recs []*snapshot.EtcdSnapshot
			for _, s := range c.EtcdSnapshots {
				if s.Kind == "ETCDSnapshotFile" {
					recs = append(recs, s)
				}
			}
			if len(recs) == 0 {
				// No record read: the distribution records none (hosted control plane, another
				// distribution), or the source did not collect them (older bundles). Neither is
				// evidence of a missing backup.
				continue
			}
			if f, ok := staleBackup(ctx, c, recs, "", maxAge); ok {
				out = append(out, f)
			}
			out = append(out, failingLocations(ctx, c, recs, "")...)
		}
		return out, nil
	},
}

func staleBackup(ctx *Context, c *snapshot.Cluster, recs []*snapshot.EtcdSnapshot, affects string, maxAge time.Duration) (finding.Finding, bool) {
	var newest, newestAny *snapshot.EtcdSnapshot
	failed := 0
	for _, s := range recs {
		if newestAny == nil || s.CreatedAt.After(newestAny.CreatedAt) {
			newestAny = s
		}
		if !s.Ready {
			failed++
			continue
		}
		if newest == nil || s.CreatedAt.After(newest.CreatedAt) {
			newest = s
		}
	}
	if newest != nil && !newest.CreatedAt.IsZero() && ctx.Age(newest.CreatedAt) <= maxAge {
		return finding.Finding{}, false
	}
	target := c.Name
	if affects != "" {
		target = affects
	}
	obj := newestAny
	var summary string
	switch {
	case newest == nil:
		summary = fmt.Sprintf("cluster %s has no successful etcd snapshot: all %d records failed or are missing from storage", target, len(recs))
	case newest.CreatedAt.IsZero():
		summary = fmt.Sprintf("cluster %s: the newest etcd snapshot record has no creation time", target)
		obj = newest
	default:
		summary = fmt.Sprintf("cluster %s: the newest successful etcd snapshot is %s old (want one within %s before an upgrade)", target, human(ctx.Age(newest.CreatedAt)), human(maxAge))
		obj = newest
	}
	apiVersion := "k3s.cattle.io/v1"
	if obj.Kind == "ETCDSnapshot" {
		apiVersion = "rke.cattle.io/v1"
	}
	o := ref(apiVersion, obj.Kind, obj.Namespace, obj.Name)
	f := ctx.New("cluster/etcd-backup-stale", c, o, summary)
	if newest != nil {
		f.Evidence = append(f.Evidence, ev(sourceOf(c, o), "newest successful snapshot %s created %s on node %s (%s)", newest.Name, newest.CreatedAt.Format(time.RFC3339), orDash(newest.Node), orDash(newest.Location)))
	}
	if failed > 0 {
		na := ref(apiVersion, newestAny.Kind, newestAny.Namespace, newestAny.Name)
		f.Evidence = append(f.Evidence, ev(sourceOf(c, na), "%d of %d snapshot records failed or are missing; the newest record, %s: %s", failed, len(recs), newestAny.Name, orDash(newestAny.Message)))
	}
	if affects != "" && affects != c.Name {
		f.Affects = affects
	}
	f.Keys = []string{"etcd:" + target}
	if newest != nil {
		f.Since = timePtr(newest.CreatedAt.Add(maxAge))
	}
	return f, true
}
