package check

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

const (
	settingDoc = `{"apiVersion":"management.cattle.io/v3","kind":"Setting","metadata":{"name":"system-default-registry"},"value":%q,"default":""}`
	pulledPod  = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fleet-agent-6b8f9c7d54-qk4t2","namespace":"cattle-fleet-system"},
	  "spec":{"containers":[{"name":"fleet-agent","image":%q}]},
	  "status":{"phase":"Running","containerStatuses":[{"name":"fleet-agent","image":%[1]q,"imageID":"sha256:e211946f156d2f0c2ad86bb424e7b97e6b31753615268042fbaf1a01380c5af5","ready":true,"restartCount":0,"state":{"running":{"startedAt":"2026-11-28T04:30:00Z"}}}]}}`
	refusedPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fleet-agent-7c9d8e6f65-m2xwp","namespace":"cattle-fleet-system"},
	  "spec":{"containers":[{"name":"fleet-agent","image":%q}]},
	  "status":{"phase":"Pending","containerStatuses":[{"name":"fleet-agent","image":%[1]q,"imageID":"","ready":false,"restartCount":0,
	    "state":{"waiting":{"reason":"ErrImagePull","message":"failed to pull and unpack image \"docker.io/%[1]s\": failed to resolve reference \"docker.io/%[1]s\": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed"}}}]}}`
)

func addDoc(t *testing.T, b *snapshot.Builder, cluster, doc string) {
	t.Helper()
	var h snapshot.Header
	if err := json.Unmarshal([]byte(doc), &h); err != nil {
		t.Fatalf("%v: %s", err, doc)
	}
	if err := b.AddJSON(cluster, "test", &h, []byte(doc)); err != nil {
		t.Fatal(err)
	}
}

// TestPrivateEvidence: a registry is private by evidence, the public list only a fallback.
func TestPrivateEvidence(t *testing.T) {
	for _, tc := range []struct {
		name, image, setting string
		docs                 []string
		want                 bool
	}{
		{name: "configured mirror, nothing pulled yet", image: "harbor.corp.example:5000/rancher/fleet-agent:v0.16.1", setting: "harbor.corp.example:5000", want: true},
		{name: "configured mirror, a running pod pulled it", image: "harbor.corp.example:5000/rancher/fleet-agent:v0.16.1", setting: "harbor.corp.example:5000",
			docs: []string{fmt.Sprintf(pulledPod, "harbor.corp.example:5000/rancher/fleet-agent:v0.16.1")}},
		{name: "Rancher Prime's public registry as system-default-registry", image: "registry.rancher.com/rancher/fleet-agent:v0.16.1", setting: "registry.rancher.com"},
		{name: "a registry nothing marks as private", image: "registry.example.com/rancher/fleet-agent:v0.16.1"},
		{name: "a private repository on Docker Hub refused the pull", image: "acme/fleet-agent:v0.16.1",
			docs: []string{fmt.Sprintf(refusedPod, "acme/fleet-agent:v0.16.1")}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := snapshot.NewBuilder()
			b.DeclareCluster(snapshot.ClusterInfo{Name: "prod-eu-1", Role: snapshot.Downstream})
			if tc.setting != "" {
				addDoc(t, b, "prod-eu-1", fmt.Sprintf(settingDoc, tc.setting))
			}
			for _, d := range tc.docs {
				addDoc(t, b, "prod-eu-1", d)
			}
			s := b.Build()
			r, err := imageref.Parse(tc.image)
			if err != nil {
				t.Fatal(err)
			}
			e, got := privateEvidence(s, s.Cluster("prod-eu-1"), r)
			if got != tc.want {
				t.Errorf("private = %v (%+v), want %v", got, e, tc.want)
			}
			if got && e.Text == "" {
				t.Error("no evidence quoted")
			}
		})
	}
}
