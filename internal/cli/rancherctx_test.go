package cli

import (
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
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
		var out []string
		for _, tg := range targetsOf(t, args...) {
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
	// (named after the cluster, to meet its Fleet Cluster; read through the context given)
	if want := []string{"prod-eu-1@https://10.20.0.12:6443"}; !reflect.DeepEqual(got, want) {
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
		{[]string{"--rancher-url", "rancher.example.com"}, "token", `--rancher-url "rancher.example.com": want Rancher's https URL`},
		{[]string{"--rancher-url", "http://rancher.example.com"}, "token", `--rancher-url "http://rancher.example.com": want Rancher's https URL`},
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

// --rancher aims each cluster's commands at the kubeconfig's own context for it (a
// Rancher-generated kubeconfig has one per cluster, named after the display name), at an
// authorized-endpoint context when that is all there is, and otherwise at the Rancher context
// with --server the cluster's proxy URL.
func TestRancherTargetsAimAtTheUsersContexts(t *testing.T) {
	// TLS: client-go sends a kubeconfig's credentials to https servers only.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/management.cattle.io.clusters" || r.Header.Get("Authorization") != "Bearer shared" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte(`{"type":"collection","data":[
			{"id":"local","metadata":{"name":"local"},"spec":{"displayName":"local"}},
			{"id":"c-m-9p2vdl6r","metadata":{"name":"c-m-9p2vdl6r"},"spec":{"displayName":"prod-us-1"}},
			{"id":"c-m-t3b6nc8x","metadata":{"name":"c-m-t3b6nc8x"},"spec":{"displayName":"staging-1"}},
			{"id":"c-m-r8j2fw5m","metadata":{"name":"c-m-r8j2fw5m"},"spec":{"displayName":"dev-1"}}]}`))
	}))
	defer srv.Close()
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: rancher, cluster: {server: "`+srv.URL+`", certificate-authority-data: "`+ca+`"}}
- {name: prod-us-1, cluster: {server: "`+srv.URL+`/k8s/clusters/c-m-9p2vdl6r", certificate-authority-data: "`+ca+`"}}
- {name: staging-1-cp-1, cluster: {server: "https://10.0.0.7:6443"}}
- {name: staging-1, cluster: {server: "`+srv.URL+`/k8s/clusters/c-m-t3b6nc8x", certificate-authority-data: "`+ca+`"}}
users:
- {name: rancher, user: {token: "shared"}}
- {name: staging-1, user: {token: "scoped"}}
contexts:
- {name: rancher, context: {cluster: rancher, user: rancher}}
- {name: us, context: {cluster: prod-us-1, user: rancher}}
- {name: staging-1, context: {cluster: staging-1, user: staging-1}}
- {name: staging-1-cp-1, context: {cluster: staging-1-cp-1, user: staging-1}}
current-context: rancher
`), 0o600); err != nil {
		t.Fatal(err)
	}
	k := newKubeFlags()
	fs := pflag.NewFlagSet("scan", pflag.ContinueOnError)
	k.addFlags(fs)
	if err := fs.Parse([]string{"--kubeconfig", kc, "--rancher"}); err != nil {
		t.Fatal(err)
	}
	ts, err := k.targets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tg := range ts {
		got = append(got, tg.Name+" "+strings.TrimPrefix(tg.Config.Host, srv.URL)+" "+tg.Context+" "+strings.TrimPrefix(tg.ContextServer, srv.URL))
	}
	want := []string{
		"dev-1 /k8s/clusters/c-m-r8j2fw5m rancher /k8s/clusters/c-m-r8j2fw5m",
		"local /k8s/clusters/local rancher /k8s/clusters/local",
		"prod-us-1 /k8s/clusters/c-m-9p2vdl6r us ",
		"staging-1 /k8s/clusters/c-m-t3b6nc8x staging-1 ",
	}
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("targets (name host context contextServer):\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
