package source

import (
	"reflect"
	"testing"

	"k8s.io/client-go/rest"
)

func TestSplitRancherServer(t *testing.T) {
	cases := []struct{ server, base, id string }{
		{"https://rancher.example.com/k8s/clusters/c-m-4x7kq2zt", "https://rancher.example.com", "c-m-4x7kq2zt"},
		{"https://rancher.example.com/k8s/clusters/local/", "https://rancher.example.com", "local"},
		{"https://example.com/rancher/k8s/clusters/c-abcde", "https://example.com/rancher", "c-abcde"},
		{"https://rancher.example.com/", "https://rancher.example.com", ""},
		{"https://10.20.0.11:6443", "https://10.20.0.11:6443", ""},
	}
	for _, c := range cases {
		if base, id := SplitRancherServer(c.server); base != c.base || id != c.id {
			t.Errorf("SplitRancherServer(%q) = %q, %q; want %q, %q", c.server, base, id, c.base, c.id)
		}
	}
}

// Targets are named by display name, with the ID when two clusters share one, and each reads
// its cluster's proxy path with a copy of the credentials.
func TestRancherTargetsNamesAndServers(t *testing.T) {
	cfg := &rest.Config{Host: "https://rancher.example.com", BearerToken: "t"}
	ts := RancherTargets(cfg, "https://rancher.example.com/", []RancherCluster{
		{ID: "local", DisplayName: "local"}, {ID: "c-m-1", DisplayName: "prod"}, {ID: "c-m-2", DisplayName: "prod"}, {ID: "c-m-3"},
	}, func(c RancherCluster) (string, string) { return "rancher", "s-" + c.ID })
	var got []string
	for _, tg := range ts {
		got = append(got, tg.Name+" "+tg.Server+" "+tg.Config.Host+" "+tg.Context+" "+tg.ContextServer)
		if tg.Config == cfg || tg.Config.BearerToken != "t" || !tg.ViaRancher {
			t.Errorf("%s: want a copy of the credentials, read through Rancher", tg.Name)
		}
	}
	want := []string{
		"local https://rancher.example.com/k8s/clusters/local https://rancher.example.com/k8s/clusters/local rancher s-local",
		"prod (c-m-1) https://rancher.example.com/k8s/clusters/c-m-1 https://rancher.example.com/k8s/clusters/c-m-1 rancher s-c-m-1",
		"prod (c-m-2) https://rancher.example.com/k8s/clusters/c-m-2 https://rancher.example.com/k8s/clusters/c-m-2 rancher s-c-m-2",
		"c-m-3 https://rancher.example.com/k8s/clusters/c-m-3 https://rancher.example.com/k8s/clusters/c-m-3 rancher s-c-m-3",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("targets:\n%q\nwant\n%q", got, want)
	}
}
