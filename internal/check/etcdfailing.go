package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// snapshotLocation is where a snapshot record says its file is stored: "s3" for an S3 copy
// (Rancher's snapshotFile.location and k3s' spec.location are s3://<bucket>/<key>), else
// "local" (file:///var/lib/rancher/<distro>/server/db/snapshots/<name> on a server node).
// RKE2/K3s write one record per node for a local snapshot and one for its S3 upload, so a
// failing upload and a working local schedule show up as two locations with different fates.
func snapshotLocation(s *snapshot.EtcdSnapshot) string {
	if strings.HasPrefix(strings.ToLower(s.Location), "s3://") {
		return "s3"
	}
	return "local"
}

// failingLocations reports, per location, a newest snapshot record that failed: upgrade or
// not, the restore point an operator counts on is not being taken there. A location whose
// newest record succeeded is not reported, whatever failed before it.
func failingLocations(ctx *Context, c *snapshot.Cluster, recs []*snapshot.EtcdSnapshot, affects string) []finding.Finding {
	by := map[string][]*snapshot.EtcdSnapshot{}
	for _, s := range recs {
		by[snapshotLocation(s)] = append(by[snapshotLocation(s)], s)
	}
	locs := make([]string, 0, len(by))
	for l := range by {
		locs = append(locs, l)
	}
	sort.Strings(locs)
	var out []finding.Finding
	for _, l := range locs {
		if f, ok := failingLocation(ctx, c, l, by[l], affects); ok {
			out = append(out, f)
		}
	}
	return out
}

func failingLocation(ctx *Context, c *snapshot.Cluster, loc string, recs []*snapshot.EtcdSnapshot, affects string) (finding.Finding, bool) {
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].CreatedAt.After(recs[j].CreatedAt) })
	newest := recs[0]
	if newest.Ready {
		return finding.Finding{}, false
	}
	// The failing run: the records that failed since the last one that succeeded.
	run, lastOK := 0, (*snapshot.EtcdSnapshot)(nil)
	for _, s := range recs {
		if s.Ready {
			lastOK = s
			break
		}
		run++
	}
	target := c.Name
	if affects != "" {
		target = affects
	}
	o := etcdRecordRef(newest)
	summary := fmt.Sprintf("etcd snapshots of %s to %s storage are failing: the newest, %s, failed (%d in a row)", target, loc, newest.Name, run)
	if lastOK == nil {
		summary = fmt.Sprintf("etcd snapshots of %s to %s storage are failing: none of its %d records succeeded", target, loc, len(recs))
	}
	f := ctx.New("rancher/etcd-snapshot-failing", c, o, summary)
	f.Evidence = append(f.Evidence, ev(sourceOf(c, o), "newest %s snapshot %s (%s, node %s, %s) failed: %s",
		loc, newest.Name, timeOrDash(newest.CreatedAt), orDash(newest.Node), orDash(newest.Location), orDash(newest.Message)))
	if lastOK != nil {
		f.Evidence = append(f.Evidence, ev(sourceOf(c, etcdRecordRef(lastOK)), "last successful %s snapshot: %s created %s", loc, lastOK.Name, timeOrDash(lastOK.CreatedAt)))
	}
	if affects != "" && affects != c.Name {
		f.Affects = affects
	}
	f.Keys = []string{"etcd:" + target}
	f.Since = timePtr(recs[run-1].CreatedAt)
	f.Vars = map[string]string{"location": loc}
	if newest.Kind == "ETCDSnapshot" {
		f.Vars["rancher-cluster"] = newest.Cluster
		f.Vars["rancher-namespace"] = newest.Namespace
		dropCommands(&f, "etcdsnapshotfiles.k3s.cattle.io")
	} else {
		dropCommands(&f, "<rancher-")
	}
	return f, true
}

// dropCommands removes the ladder's commands that contain s: the catalogue lists the commands
// for Rancher's records and for the distribution's own, and a finding keeps those of its kind.
func dropCommands(f *finding.Finding, s string) {
	for i := range f.Remediation {
		var keep []string
		for _, c := range f.Remediation[i].Commands {
			if !strings.Contains(c, s) {
				keep = append(keep, c)
			}
		}
		f.Remediation[i].Commands = keep
	}
}

func etcdRecordRef(s *snapshot.EtcdSnapshot) finding.ObjectRef {
	if s.Kind == "ETCDSnapshot" {
		return ref("rke.cattle.io/v1", "ETCDSnapshot", s.Namespace, s.Name)
	}
	return ref("k3s.cattle.io/v1", "ETCDSnapshotFile", s.Namespace, s.Name)
}
