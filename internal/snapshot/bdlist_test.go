package snapshot

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

const bdAPIVersion, bdKind = "fleet.cattle.io/v1alpha1", "BundleDeployment"

// scenarioBDLists are the Lists of the scenario suite that hold BundleDeployments: as
// Fleet writes them, reduced by `collect`.
func scenarioBDLists(t testing.TB) [][]byte {
	var out [][]byte
	err := filepath.WalkDir("../../testdata/scenarios", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".json" {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && bytes.Contains(data, []byte(`"items"`)) && bytes.Contains(data, []byte(`"BundleDeployment"`)) {
			out = append(out, data)
		}
		return err
	})
	if err != nil || len(out) < 40 {
		t.Fatalf("%d BundleDeployment lists in the scenarios (%v)", len(out), err)
	}
	return out
}

// quirkyBDLists are Lists whose items hold what encoding/json reads in its own way: names in
// another case or escaped, a field twice, nulls and values of the wrong type where objects,
// strings, booleans and arrays are expected, escaped and invalid UTF-8 strings.
func quirkyBDLists() []string {
	item := bdItem("monitoring-stack", "cluster-fleet-default-c-m-1-0a1b")
	r := func(old, new string) string { return strings.Replace(item, old, new, 1) }
	items := []string{
		item,
		r(`"spec":{`, `"Spec":{`),
		r(`"spec":{`, `"SPEC":{`),
		r(`"deploymentID":`, `"deployment_id":`),
		r(`"deploymentID":`, `"deployment-ID":`),
		r(`"ready":true`, `"ready":true,"ready":false`),
		r(`"spec":{`, `"spec":{"paused":true},"spec":{`),
		r(`"conditions":[`, `"conditions":[{"type":"Stalled","message":"kept by encoding/json","reason":"x"}],"conditions":[`),
		r(`"kind":"BundleDeployment"`, `"\u006bind":"BundleDeployment"`),
		r(`"kind":"BundleDeployment"`, `"\u212aind":"BundleDeployment"`),
		r(`"kind":"BundleDeployment"`, `"kind":"Bundle\u0044eployment"`),
		r(`"apiVersion":"fleet.cattle.io/v1alpha1"`, `"apiVersion":"fleet.cattle.io\/v1alpha1"`),
		r(`"deploymentID":"s-d49e74e15c09:a7d4bddd0408"`, `"deploymentID":"s-d49e\u0037\ud83d\ude00:`+"\xff\xfe"+`"`),
		r(`"deploymentID":"s-d49e74e15c09:a7d4bddd0408"`, `"deploymentID":null`),
		r(`"deploymentID":"s-d49e74e15c09:a7d4bddd0408"`, `"deploymentID":42`),
		r(`"ready":true`, `"ready":"true"`),
		r(`"ready":true`, `"ready":null`),
		r(`"nonModified":true`, `"nonModified":1`),
		r(`"spec":{`, `"spec":null,"x":{`),
		r(`"spec":{`, `"spec":[],"x":{`),
		r(`"status":{`, `"status":"ok","x":{`),
		r(`"options":{`, `"options":null,"x":{`),
		r(`"helm":{"releaseName":"monitoring-stack"}`, `"helm":null`),
		r(`"helm":{"releaseName":"monitoring-stack"}`, `"helm":{"releaseName":null,"ReleaseName":"x"}`),
		r(`"helm":{"releaseName":"monitoring-stack"}`, `"helm":"x"`),
		r(`"conditions":[`, `"conditions":null,"x":[`),
		r(`"conditions":[`, `"conditions":[null,{},`),
		r(`"conditions":[`, `"conditions":[{"Type":"x","status":"True"},`),
		r(`"conditions":[`, `"conditions":{"x":[`) + `]}`,
		r(`"conditions":[`, `"conditions":["Ready",`),
		r(`"status":"True","type":"Installed"`, `"status":true,"type":"Installed"`),
		r(`"conditions":[`, `"conditions":[],"x":[`),
		r(`"spec":{`, `"spec":{"helmChartOptions":{"chart":"x","version":"1"},"ociContents":true,"paused":false,"offSchedule":true,`),
		r(`"spec":{`, `"spec":{"helmChartOptions":null,`),
		r(`"spec":{`, `"spec":{"helmChartOptions":"x",`),
		r(`"status":{`, `"status":{"nonReadyStatus":[{"kind":"Deployment","name":"fleet-agent","summary":{"state":"in-progress","message":["Pending"],"transitioning":true}}],"modifiedStatus":[{"kind":"ConfigMap","name":"x","missing":true}],`),
		r(`"status":{`, `"status":{"nonReadyStatus":[],"modifiedStatus":null,`),
		r(`"generation":3,`, `"generation":3,"deletionTimestamp":"2026-10-30T09:30:00Z",`),
		r(`"generation":3,`, `"generation":3,"deletionTimestamp":"yesterday",`),
		r(`"metadata":{`, `"metadata":null,"x":{`),
		r(`"labels":{`, `"labels":{"fleet.cattle.io/cluster":"a","fleet.cattle.io/cluster":"b",`),
		r(`"name":"monitoring-stack"`, `"NAME":"monitoring-stack"`),
		r(`"status":{`, `"status":{"display":{"a":[1,2.5e3,{"b":null}],"c":"\t"},`),
	}
	out := make([]string, 0, len(items)+2)
	for _, it := range items {
		out = append(out, bdList(it, item))
	}
	// Two items that share their strings, and an empty list.
	return append(out, bdList(item, bdItem("logging", "cluster-fleet-default-c-m-2-9f8e")), bdList())
}

func bdItem(name, namespace string) string {
	return `{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"BundleDeployment","metadata":{"creationTimestamp":"2026-09-29T09:30:00Z","generation":3,` +
		`"labels":{"fleet.cattle.io/bundle-name":"` + name + `","fleet.cattle.io/cluster":"c-m-1","fleet.cattle.io/managed":"true"},"name":"` + name + `","namespace":"` + namespace + `"},` +
		`"spec":{"deploymentID":"s-d49e74e15c09:a7d4bddd0408","options":{"namespace":"default","helm":{"releaseName":"` + name + `"}},"stagedDeploymentID":"s-d49e74e15c09:a7d4bddd0408"},` +
		`"status":{"appliedDeploymentID":"s-d49e74e15c09:a7d4bddd0408","conditions":[{"lastUpdateTime":"2026-10-29T09:30:00Z","status":"True","type":"Installed"},` +
		`{"lastUpdateTime":"2026-10-29T09:30:00Z","message":"ErrApplied(1) [Cluster fleet-default/c-m-1: cannot patch \"x\"]","reason":"Error","status":"False","type":"Ready"}],` +
		`"display":{"state":""},"nonModified":true,"ready":true}}`
}

func bdList(items ...string) string {
	return `{"apiVersion":"v1","items":[` + strings.Join(items, ",") + `],"kind":"List","metadata":{"resourceVersion":""}}`
}

// sameAsReflection fails t unless the hand-written decode of data gives what the reflection
// decode gives (and, when both read it, what encoding/json makes of each item).
func sameAsReflection(t *testing.T, data []byte) {
	t.Helper()
	var got []*Object
	var ok, more bool
	for _, max := range []int{1, -1} {
		got, _, ok, more = decodeBundleDeployments(bdAPIVersion, bdKind, data, false, max, new(Strings))
		want, _, wantOK, wantMore := decodeList[BundleDeployment](bdAPIVersion, bdKind, data, false, max, new(Strings))
		if ok != wantOK || more != wantMore || len(got) != len(want) {
			t.Fatalf("at most %d: by hand: %d objects, ok=%v, more=%v; by reflection: %d, %v, %v", max, len(got), ok, more, len(want), wantOK, wantMore)
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("item %d:\nby hand       %+v\nby reflection %+v", i, got[i].Typed(), want[i].Typed())
			}
		}
	}
	if !ok {
		return
	}
	var list struct{ Items []json.RawMessage }
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	for i := range got {
		var bd BundleDeployment
		if err := json.Unmarshal(list.Items[i], &bd); err != nil {
			t.Fatalf("item %d: encoding/json: %v", i, err)
		}
		if !reflect.DeepEqual(got[i].Typed(), &bd) {
			t.Fatalf("item %d:\nby hand       %+v\nencoding/json %+v", i, got[i].Typed(), &bd)
		}
	}
}

// A List of BundleDeployments read by hand decodes exactly as the reflection decode and
// encoding/json decode it, quirks included; the scenarios' Lists, and the quirk-free
// ones, are read by hand to the end (a fallback would cost the reflection decode again).
func TestBundleDeploymentListsByHand(t *testing.T) {
	for i, l := range quirkyBDLists() {
		t.Run("quirk", func(t *testing.T) { sameAsReflection(t, []byte(l)) })
		if i == 0 || i == len(quirkyBDLists())-1 {
			assertByHand(t, []byte(l))
		}
	}
	for _, l := range scenarioBDLists(t) {
		sameAsReflection(t, l)
		if _, _, ok, _ := decodeList[BundleDeployment](bdAPIVersion, bdKind, l, false, -1, nil); ok {
			assertByHand(t, l)
		}
	}
}

// assertByHand fails t when the hand-written reader gives data up to the reflection decode.
func assertByHand(t *testing.T, data []byte) {
	t.Helper()
	strs := new(Strings)
	r := bdReader{opts: decodeOptions(strs), strs: strs, apiVersion: bdAPIVersion, kind: bdKind}
	if _, _, ok, _ := decodeListWith[BundleDeployment](bdAPIVersion, bdKind, data, false, -1, r.opts, r.item); !ok {
		t.Errorf("read by reflection, not by hand: %.200s", data)
	}
}

// FuzzBundleDeploymentList holds the hand-written decode to the reflection decode and to
// encoding/json on any bytes.
func FuzzBundleDeploymentList(f *testing.F) {
	for _, l := range quirkyBDLists() {
		f.Add([]byte(l))
	}
	for _, l := range scenarioBDLists(f) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsReflection(t, data)
	})
}

// The string table's recent slots are found by a hash of a few words of a string: two
// strings that differ only between those words share a slot and are still told apart, and
// a repeated string is shared.
func TestStringsTellApartWhatTheyHashAlike(t *testing.T) {
	a := []byte("cluster-fleet-default-c-m-1aaaa0000000000000001")
	b := []byte("cluster-fleet-default-c-m-1aaaa0000000000000001")
	b[9] = 'X' // outside the start, middle and end words
	if quickHash(a) != quickHash(b) {
		t.Fatalf("the test needs two strings of one slot")
	}
	var strs Strings
	for range 3 {
		if got := strs.get(a); got != string(a) {
			t.Fatalf("get(%q) = %q", a, got)
		}
		if got := strs.get(b); got != string(b) {
			t.Fatalf("get(%q) = %q", b, got)
		}
	}
	if x, y := strs.get(a), strs.get(append([]byte(nil), a...)); unsafe.StringData(x) != unsafe.StringData(y) {
		t.Errorf("a repeated string is held twice")
	}
}
