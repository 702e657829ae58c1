package snapshot

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// A BundleDeployment as Fleet writes it for one downstream cluster.
const bdJSON = `{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"BundleDeployment","metadata":{"name":"fleet-agent-c-m-4x7kq2zt","namespace":"cluster-fleet-default-c-m-4x7kq2zt-1a2b3c4d5e6f","labels":{"fleet.cattle.io/bundle-name":"fleet-agent-c-m-4x7kq2zt","fleet.cattle.io/bundle-namespace":"fleet-default","fleet.cattle.io/managed":"true"},"managedFields":[{"manager":"fleetcontroller","operation":"Update"}]},"spec":{"deploymentID":"s-d49e74e15c09d39ea:a7d4bddd0408c689","stagedDeploymentID":"s-d49e74e15c09d39ea:a7d4bddd0408c689","options":{"namespace":"cattle-fleet-system","helm":{"releaseName":"fleet-agent-c-m-4x7kq2zt"}}},"status":{"appliedDeploymentID":"s-d49e74e15c09d39ea:a7d4bddd0408c689","ready":false,"nonModified":true,"conditions":[{"type":"Ready","status":"False","lastUpdateTime":"2026-10-29T09:30:00Z","message":"another operation (install/upgrade/rollback) is in progress"}],"display":{"state":"NotReady","deployed":"True"}}}`

const helmSecretJSON = `{"apiVersion":"v1","kind":"Secret","type":"helm.sh/release.v1","metadata":{"name":"sh.helm.release.v1.fleet-agent-c-m-4x7kq2zt.v3","namespace":"cattle-fleet-system","labels":{"name":"fleet-agent-c-m-4x7kq2zt","owner":"helm","status":"pending-upgrade","version":"3"}},"data":{"release":"bm90IGEgcmVsZWFzZQ=="}}`

func prepared(t *testing.T, raw string) *Object {
	t.Helper()
	var h Header
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		t.Fatal(err)
	}
	o, err := Prepare(&h, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Interning must not change a single field the checks read, and equal strings of two
// objects must end up sharing one copy (what makes serve's caches small).
func TestInternKeepsObjectsEqualAndSharesStrings(t *testing.T) {
	for _, raw := range []string{bdJSON, helmSecretJSON} {
		plain, a, b := prepared(t, raw), prepared(t, raw), prepared(t, raw)
		a.Intern()
		b.Intern()
		if !reflect.DeepEqual(plain.obj, a.obj) || !reflect.DeepEqual(plain.helm, a.helm) || plain.key != a.key {
			t.Fatalf("interning changed the object:\nbefore %#v\nafter  %#v", plain.obj, a.obj)
		}
		var la, lb map[string]string
		switch x := a.obj.(type) {
		case *BundleDeployment:
			la, lb = labelMap(x.Labels), labelMap(b.obj.(*BundleDeployment).Labels)
			if len(la) == 0 {
				t.Fatal("the BundleDeployment kept no labels")
			}
			if unsafe.StringData(x.Status.Conditions[0].Message) != unsafe.StringData(b.obj.(*BundleDeployment).Status.Conditions[0].Message) {
				t.Error("condition messages of two interned BundleDeployments are separate copies")
			}
		case *corev1.Secret:
			la, lb = x.Labels, b.obj.(*corev1.Secret).Labels
			if a.helm.Status != "pending-upgrade" || unsafe.StringData(a.helm.Name) != unsafe.StringData(b.helm.Name) {
				t.Errorf("Helm release record not interned: %+v", a.helm)
			}
		}
		for k, v := range la {
			if unsafe.StringData(v) != unsafe.StringData(lb[k]) {
				t.Errorf("label %s: values are separate copies", k)
			}
		}
	}
}

func labelMap(l Labels) map[string]string {
	m := map[string]string{}
	for _, x := range l {
		m[x.Key] = x.Value
	}
	return m
}
