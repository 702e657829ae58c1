package cli

import (
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
)

func loadKubeconfig(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join("testdata", "rancher-kubeconfigs", name)
}

// describe renders the matches as sorted "context → base id via" lines.
func describe(m map[string]rancherContext) []string {
	via := map[contextVia]string{viaProxy: "proxy", viaRancher: "rancher", viaEndpoint: "endpoint"}
	var out []string
	for n, r := range m {
		out = append(out, n+" → "+r.base+" "+r.id+" "+via[r.via])
	}
	sort.Strings(out)
	return out
}

// Contexts of the kubeconfigs Rancher generates are matched to the clusters they reach
// without renaming: by proxy URL, Rancher's own URL (the local cluster), and authorized
// endpoint contexts by the name they extend and the user they share.
func TestRancherContextsMatchTheirClusters(t *testing.T) {
	cases := map[string][]string{
		"legacy.yaml": {
			"prod-eu-1 → https://rancher.example.com c-m-4x7kq2zt proxy",
			"prod-eu-1-cp-1 → https://rancher.example.com c-m-4x7kq2zt endpoint",
			"prod-eu-1-cp-2 → https://rancher.example.com c-m-4x7kq2zt endpoint",
		},
		"ext.yaml": {
			"edge-arm-1 → https://rancher.example.com c-m-h5w8zq3n proxy",
			"edge-arm-1-pi-a → https://rancher.example.com c-m-h5w8zq3n endpoint",
			"local → https://rancher.example.com local proxy",
			"prod-us-1 → https://rancher.example.com c-m-9p2vdl6r proxy",
			"rancher → https://rancher.example.com local rancher",
			"staging-1 → https://rancher.example.com c-m-t3b6nc8x proxy",
			"staging-1-fqdn → https://rancher.example.com c-m-t3b6nc8x endpoint",
			// kind-dev: not Rancher's, absent
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) {
			raw, err := clientcmd.LoadFromFile(loadKubeconfig(t, file))
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(matchRancherContexts(raw)); !reflect.DeepEqual(got, want) {
				t.Errorf("matches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// An endpoint context is not matched to a proxy context whose name it happens to extend when
// they do not share the user (the token): "prod-eu" is another cluster than "prod-eu-1".
func TestRancherEndpointContextNeedsTheSameUser(t *testing.T) {
	raw, err := clientcmd.Load([]byte(`
apiVersion: v1
kind: Config
clusters:
- {name: prod-eu, cluster: {server: "https://rancher.example.com/k8s/clusters/c-m-aaaa1111"}}
- {name: prod-eu-1, cluster: {server: "https://rancher.example.com/k8s/clusters/c-m-bbbb2222"}}
- {name: prod-eu-1-cp-1, cluster: {server: "https://10.0.0.5:6443"}}
users:
- {name: a, user: {token: "x"}}
- {name: b, user: {token: "y"}}
contexts:
- {name: prod-eu, context: {cluster: prod-eu, user: a}}
- {name: prod-eu-1, context: {cluster: prod-eu-1, user: b}}
- {name: prod-eu-1-cp-1, context: {cluster: prod-eu-1-cp-1, user: b}}
- {name: prod-eu-x, context: {cluster: prod-eu-1-cp-1, user: b}}
`))
	if err != nil {
		t.Fatal(err)
	}
	m := matchRancherContexts(raw)
	if got := m["prod-eu-1-cp-1"]; got.id != "c-m-bbbb2222" || got.via != viaEndpoint {
		t.Errorf("prod-eu-1-cp-1 matched %+v, want c-m-bbbb2222 through its endpoint", got)
	}
	if got, ok := m["prod-eu-x"]; ok {
		t.Errorf("prod-eu-x extends prod-eu but uses another user: matched %+v, want no match", got)
	}
}

// --all-contexts on a Rancher kubeconfig reads each cluster once, through the context that
// goes through Rancher's proxy; explicit --context flags keep the first one given.
func TestAllContextsReadsEachRancherClusterOnce(t *testing.T) {
	names := func(args ...string) []string {
		k := newKubeFlags()
		fs := pflag.NewFlagSet("scan", pflag.ContinueOnError)
		k.addFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		ts, err := k.targets(t.Context())
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var out []string
		for _, tg := range ts {
			out = append(out, tg.Name+"@"+tg.Server)
		}
		sort.Strings(out)
		return out
	}
	got := names("--kubeconfig", loadKubeconfig(t, "ext.yaml"), "--all-contexts")
	want := []string{
		"edge-arm-1@https://rancher.example.com/k8s/clusters/c-m-h5w8zq3n",
		"kind-dev@https://127.0.0.1:38211",
		"local@https://rancher.example.com/k8s/clusters/local",
		"prod-us-1@https://rancher.example.com/k8s/clusters/c-m-9p2vdl6r",
		"staging-1@https://rancher.example.com/k8s/clusters/c-m-t3b6nc8x",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("--all-contexts read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got = names("--kubeconfig", loadKubeconfig(t, "legacy.yaml"), "--all-contexts")
	if want := []string{"prod-eu-1@https://rancher.example.com/k8s/clusters/c-m-4x7kq2zt"}; !reflect.DeepEqual(got, want) {
		t.Errorf("legacy --all-contexts read %v, want %v", got, want)
	}
	got = names("--kubeconfig", loadKubeconfig(t, "legacy.yaml"), "--context", "prod-eu-1-cp-2", "--context", "prod-eu-1")
	if want := []string{"prod-eu-1-cp-2@https://10.20.0.12:6443"}; !reflect.DeepEqual(got, want) {
		t.Errorf("explicit contexts read %v, want the first given, %v", got, want)
	}
}

// --rancher refuses what cannot be a Rancher context, naming it.
func TestRancherFlagErrorsNameTheInput(t *testing.T) {
	cases := []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--kubeconfig", loadKubeconfig(t, "legacy.yaml"), "--rancher", "--context", "prod-eu-1-cp-1"}, "",
			`--rancher --context "prod-eu-1-cp-1": its server https://10.20.0.11:6443 is the cluster's own API server (an authorized cluster endpoint), not Rancher's URL`},
		{[]string{"--kubeconfig", loadKubeconfig(t, "ext.yaml"), "--rancher", "--all-contexts"}, "", "--rancher with --all-contexts"},
		{[]string{"--rancher-url", "https://rancher.example.com"}, "", "--rancher-url needs Rancher's API token in the environment variable RANCHER_TOKEN"},
		{[]string{"--rancher-url", "rancher.example.com"}, "token", `--rancher-url "rancher.example.com": want Rancher's URL`},
		{[]string{"--rancher-url", "https://rancher.example.com", "--context", "x"}, "token", "does not take --context"},
	}
	for _, c := range cases {
		t.Setenv(RancherTokenEnv, c.env)
		k := newKubeFlags()
		fs := pflag.NewFlagSet("scan", pflag.ContinueOnError)
		k.addFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		_, err := k.targets(t.Context())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one saying %q", c.args, err, c.want)
		}
	}
}
