package check

import (
	"strings"
	"testing"
	"time"

	"github.com/rancher/wrangler/v3/pkg/genericcondition"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

var statesNow = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

func runStateCheck(t *testing.T, ch Check, clusters ...*snapshot.Cluster) []finding.Finding {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	ctx := &Context{Snap: &snapshot.Snapshot{Clusters: clusters}, Now: statesNow, Thresholds: NewThresholds(cat), Catalog: cat}
	fs, err := ch.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// A namespace whose content the snapshot did not collect is still named with what the
// namespace controller says it waits for, and one deleted a minute ago is not stuck.
func TestNamespaceTerminatingFromConditionsAlone(t *testing.T) {
	deleted := func(ago time.Duration) *corev1.Namespace {
		return &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: "cattle-logging-system", DeletionTimestamp: &metav1.Time{Time: statesNow.Add(-ago)}},
			Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: []corev1.NamespaceCondition{
				{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionTrue, Reason: "DiscoveryFailed",
					Message: "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"},
			}},
		}
	}
	c := &snapshot.Cluster{Name: "prod-eu-1", Role: snapshot.Downstream, Namespaces: []*corev1.Namespace{deleted(2 * time.Hour)}}
	fs := runStateCheck(t, namespaceTerminating, c)
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "Discovery failed for some groups") {
		t.Fatalf("want one finding quoting the discovery failure, got %+v", fs)
	}
	if fs[0].Keys[0] != NamespaceKey("prod-eu-1", "cattle-logging-system") {
		t.Errorf("keys %v: want the namespace key first", fs[0].Keys)
	}
	c.Namespaces = []*corev1.Namespace{deleted(time.Minute)}
	if fs := runStateCheck(t, namespaceTerminating, c); len(fs) != 0 {
		t.Errorf("a namespace deleted a minute ago is being deleted, not stuck: %+v", fs)
	}
}

func sucPlanFixture(validated *genericcondition.GenericCondition) *suc.Plan {
	p := &suc.Plan{}
	p.Name, p.Namespace = "rke2-agent", "cattle-system"
	p.Spec.ServiceAccountName = "system-upgrade-controller"
	if validated != nil {
		p.Status.Conditions = []genericcondition.GenericCondition{*validated}
	}
	return p
}

// Validated=False is reported the moment it is seen (SUC creates no Job until it is True);
// Validated=True and a Plan SUC has not processed yet are not.
func TestPlanInvalidAtOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		cond *genericcondition.GenericCondition
		want bool
	}{
		{"secret missing, a minute ago", &genericcondition.GenericCondition{Type: "Validated", Status: "False", Reason: "Error",
			Message: `secrets "rke2-upgrade-env" not found`, LastUpdateTime: statesNow.Add(-time.Minute).Format(time.RFC3339)}, true},
		{"valid", &genericcondition.GenericCondition{Type: "Validated", Status: "True", Reason: "PlanIsValid"}, false},
		{"not processed yet", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := &snapshot.Cluster{Name: "prod-eu-1", Role: snapshot.Downstream, Plans: []*suc.Plan{sucPlanFixture(c.cond)}}
			fs := runStateCheck(t, sucPlanValidity, cl)
			if got := len(fs) == 1; got != c.want {
				t.Fatalf("reported=%v, want %v: %+v", got, c.want, fs)
			}
			if c.want && !strings.Contains(fs[0].Summary, `secrets "rke2-upgrade-env" not found`) {
				t.Errorf("summary does not quote the condition: %s", fs[0].Summary)
			}
		})
	}
}

// Each location is judged by its own newest record: a failing S3 upload is reported while
// local snapshots succeed, and an S3 failure followed by a success is not.
func TestEtcdSnapshotFailingPerLocation(t *testing.T) {
	rec := func(name, loc string, hoursAgo int, ok bool) *snapshot.EtcdSnapshot {
		return &snapshot.EtcdSnapshot{Kind: "ETCDSnapshotFile", Name: name, Location: loc, CreatedAt: statesNow.Add(-time.Duration(hoursAgo) * time.Hour), Ready: ok, Message: map[bool]string{false: "Access Denied."}[ok]}
	}
	const local, s3 = "file:///var/lib/rancher/rke2/server/db/snapshots/x", "s3://backups/rke2/x"
	failing := []*snapshot.EtcdSnapshot{rec("local-1", local, 9, true), rec("s3-1", "S3://backups/rke2/x", 9, false), rec("s3-0", s3, 21, true)}
	recovered := []*snapshot.EtcdSnapshot{rec("local-1", local, 9, true), rec("s3-1", s3, 9, true), rec("s3-0", s3, 21, false)}
	c := &snapshot.Cluster{Name: "prod-eu-1", Role: snapshot.Downstream, EtcdSnapshots: failing}
	var got []string
	for _, f := range runStateCheck(t, etcdBackups, c) {
		got = append(got, f.ID+" "+f.Object.Name)
	}
	if strings.Join(got, ",") != "rancher/etcd-snapshot-failing s3-1" {
		t.Errorf("failing S3, working local: got %v", got)
	}
	c.EtcdSnapshots = recovered
	if fs := runStateCheck(t, etcdBackups, c); len(fs) != 0 {
		t.Errorf("S3 recovered: want nothing, got %+v", fs)
	}
}
