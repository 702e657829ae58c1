package snapshot_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// The slim BundleDeployment must read every field it keeps exactly as Fleet's own type
// reads it, from every BundleDeployment of the scenarios and the example fleet: a JSON name
// that does not match Fleet's would silently read as empty.
func TestSlimBundleDeploymentReadsAsFleetDoes(t *testing.T) {
	var roots []string
	for _, dir := range []string{"../../testdata/scenarios", "../../examples"} {
		matches, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
		roots = append(roots, matches...)
	}
	seen := 0
	fields := map[string]bool{}
	for _, root := range roots {
		if st, err := os.Stat(root); err != nil || !st.IsDir() {
			continue
		}
		err := source.ReadRawObjects(root, func(o source.RawObject) error {
			if o.Object["kind"] != "BundleDeployment" {
				return nil
			}
			raw, err := json.Marshal(o.Object)
			if err != nil {
				return err
			}
			var full fleetv1.BundleDeployment
			var slim snapshot.BundleDeployment
			if err := json.Unmarshal(raw, &full); err != nil {
				return err
			}
			if err := json.Unmarshal(raw, &slim); err != nil {
				t.Errorf("%s: %v", o.File, err)
				return nil
			}
			seen++
			want := map[string]any{
				"name": full.Name, "namespace": full.Namespace, "uid": full.UID, "resourceVersion": full.ResourceVersion,
				"deploymentID": full.Spec.DeploymentID, "stagedDeploymentID": full.Spec.StagedDeploymentID,
				"paused": full.Spec.Paused, "offSchedule": full.Spec.OffSchedule, "ociContents": full.Spec.OCIContents,
				"helmChartOptions": full.Spec.HelmChartOptions != nil,
				"releaseName":      releaseName(full.Spec.Options.Helm),
				"conditions":       full.Status.Conditions, "appliedDeploymentID": full.Status.AppliedDeploymentID,
				"ready": full.Status.Ready, "nonModified": full.Status.NonModified,
				"nonReadyStatus": full.Status.NonReadyStatus, "modifiedStatus": full.Status.ModifiedStatus,
			}
			got := map[string]any{
				"name": slim.Name, "namespace": slim.Namespace, "uid": slim.UID, "resourceVersion": slim.ResourceVersion,
				"deploymentID": slim.Spec.DeploymentID, "stagedDeploymentID": slim.Spec.StagedDeploymentID,
				"paused": slim.Spec.Paused, "offSchedule": slim.Spec.OffSchedule, "ociContents": slim.Spec.OCIContents,
				"helmChartOptions": slim.Spec.HelmChartOptions != nil,
				"releaseName":      "",
				"conditions":       slim.Status.Conditions, "appliedDeploymentID": slim.Status.AppliedDeploymentID,
				"ready": slim.Status.Ready, "nonModified": slim.Status.NonModified,
				"nonReadyStatus": slim.Status.NonReadyStatus, "modifiedStatus": slim.Status.ModifiedStatus,
			}
			if slim.Spec.Options.Helm != nil {
				got["releaseName"] = slim.Spec.Options.Helm.ReleaseName
			}
			for k, v := range want {
				if !reflect.DeepEqual(v, got[k]) {
					t.Errorf("%s %s: %s is %#v, Fleet's type reads %#v", o.File, full.Name, k, got[k], v)
				}
				if !reflect.ValueOf(v).IsZero() {
					fields[k] = true
				}
			}
			for _, k := range []string{"fleet.cattle.io/bundle-name", "fleet.cattle.io/bundle-namespace", "fleet.cattle.io/cluster", "fleet.cattle.io/cluster-namespace"} {
				if slim.Labels.Get(k) != full.Labels[k] {
					t.Errorf("%s %s: label %s is %q, Fleet's type reads %q", o.File, full.Name, k, slim.Labels.Get(k), full.Labels[k])
				}
				if full.Labels[k] != "" {
					fields[k] = true
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", root, err)
		}
	}
	if seen < 20 {
		t.Fatalf("only %d BundleDeployments read", seen)
	}
	// The fixtures must exercise the fields the checks read most, or the comparison proves little.
	for _, k := range []string{"name", "namespace", "deploymentID", "stagedDeploymentID", "conditions", "appliedDeploymentID",
		"ready", "nonModified", "nonReadyStatus", "modifiedStatus", "fleet.cattle.io/bundle-name", "fleet.cattle.io/cluster"} {
		if !fields[k] {
			t.Errorf("no fixture BundleDeployment sets %s", k)
		}
	}
}

func releaseName(o *fleetv1.HelmOptions) string {
	if o == nil {
		return ""
	}
	return o.ReleaseName
}
