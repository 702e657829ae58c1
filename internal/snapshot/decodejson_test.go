package snapshot_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A List of BundleDeployments decodes in one pass exactly as encoding/json decodes each item,
// whatever the quirks of the bytes: escaped and invalid UTF-8 strings, field names in
// another case, a label given twice, labels that are null, an escaped label name, a
// condition without a message, a null UID, an object being deleted. Objects decoded through one string table share
// the strings they repeat, and a name is never confused with another.
func TestPrepareListDecodesAsEncodingJSON(t *testing.T) {
	items := []string{
		bdJSON("fleet-agent-c-m-1", "cluster-fleet-default-c-m-1-0a1b", `{"fleet.cattle.io/bundle-name":"fleet-agent-c-m-1","fleet.cattle.io/cluster":"c-m-1","app":"x"}`,
			`[{"type":"Ready","status":"False","message":"ErrApplied(1) [Cluster fleet-default/c-m-1: cannot patch \"cattle-fleet-system\"]","lastUpdateTime":"2026-10-29T09:30:00Z"}]`),
		bdJSON("monitoring-stack", "cluster-fleet-default-c-m-1-0a1b", `{"fleet.cattle.io/cluster":"c-m-1","fleet.cattle.io/cluster":"c-m-2","fleet.cattle.io\u002fbundle-name":"monitoring-stack"}`,
			`[{"type":"Ready","status":"True","message":"caf\u00e9 `+"\xff"+` broken","lastUpdateTime":"2026-10-29T09:30:00Z"}]`),
		bdJSON("monitoring-stack", "cluster-fleet-default-c-m-2-9f8e", `null`,
			`[{"type":"Ready","status":"True","lastUpdateTime":"2026-10-29T09:30:00Z"},{"type":"Installed","status":"True"}]`),
		strings.NewReplacer(`"status":{`, `"Status":{`, `"name":"logging"`, `"NAME":"logging","uid":null`).Replace(bdJSON("logging", "cluster-fleet-default-c-m-2-9f8e", `{}`, `[]`)),
		strings.Replace(bdJSON("being-deleted", "cluster-fleet-default-c-m-2-9f8e", `{}`, `[]`), `"generation":3,`, `"generation":3,"deletionTimestamp":"2026-10-30T09:30:00Z","finalizers":["fleet.cattle.io/bundle-deployment-finalizer"],`, 1),
	}
	list := []byte(`{"apiVersion":"v1","items":[` + strings.Join(items, ",") + `],"kind":"List","metadata":{"resourceVersion":""}}`)
	var strs snapshot.Strings
	objs, ok, more := snapshot.PrepareList("fleet.cattle.io/v1alpha1", "BundleDeployment", list, -1, &strs)
	if !ok || more || len(objs) != len(items) {
		t.Fatalf("PrepareList: %d objects, ok=%v more=%v; want %d", len(objs), ok, more, len(items))
	}
	for i, it := range items {
		var want snapshot.BundleDeployment
		if err := json.Unmarshal([]byte(it), &want); err != nil {
			t.Fatal(err)
		}
		got := objs[i].Typed().(*snapshot.BundleDeployment)
		if !reflect.DeepEqual(got, &want) {
			t.Errorf("item %d:\n got %+v\nwant %+v", i, got, &want)
		}
	}
	if d := objs[4].Typed().(*snapshot.BundleDeployment).DeletionTimestamp; d == nil || d.UTC().Format("2006-01-02T15:04:05Z") != "2026-10-30T09:30:00Z" {
		t.Errorf("deletionTimestamp not kept: %v", d)
	}
	a, b := objs[1].Typed().(*snapshot.BundleDeployment), objs[2].Typed().(*snapshot.BundleDeployment)
	if a.Spec.DeploymentID != b.Spec.DeploymentID || unsafe.StringData(a.Spec.DeploymentID) != unsafe.StringData(b.Spec.DeploymentID) {
		t.Errorf("the deployment ID two BundleDeployments repeat is held twice")
	}
	if a.Namespace == b.Namespace || a.Name != b.Name {
		t.Errorf("names or namespaces mixed up: %s/%s, %s/%s", a.Namespace, a.Name, b.Namespace, b.Name)
	}
}

func bdJSON(name, namespace, labels, conditions string) string {
	return `{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"BundleDeployment","metadata":{"creationTimestamp":"2026-09-29T09:30:00Z","generation":3,` +
		`"labels":` + labels + `,"name":"` + name + `","namespace":"` + namespace + `","managedFields":[{"manager":"fleetcontroller"}]},` +
		`"spec":{"deploymentID":"s-d49e74e15c09:a7d4bddd0408","options":{"namespace":"default","helm":{"releaseName":"` + name + `","values":{"a":1}}},"stagedDeploymentID":"s-d49e74e15c09:a7d4bddd0408"},` +
		`"status":{"appliedDeploymentID":"s-d49e74e15c09:a7d4bddd0408","conditions":` + conditions + `,"display":{"state":""},"nonModified":true,"ready":true}}`
}
