package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// Rancher cannot run here, so `--rancher` is tried against testenv.RancherStandIn, a small
// reverse proxy standing in for Rancher: it routes /k8s/clusters/<id>/… to one real test API
// server per cluster of the example fleet (the replay of commands_test.go), checks the bearer
// token (401 for an unknown one, 403 for a cluster the token's user may not see) and answers
// Steve's filtered list of management.cattle.io clusters from the "local" cluster, which
// carries one management.cattle.io/v3 Cluster per cluster, named by its ID and displaying the
// name the example gives it.

// exampleClusterIDs are the Rancher cluster IDs of the example fleet (its unstick-bundle.yaml
// servers and Fleet Cluster names).
var exampleClusterIDs = map[string]string{
	"local":      "local",
	"prod-eu-1":  "c-m-4x7kq2zt",
	"prod-us-1":  "c-m-9p2vdl6r",
	"edge-arm-1": "c-m-h5w8zq3n",
	"staging-1":  "c-m-t3b6nc8x",
	"dev-1":      "c-m-r8j2fw5m",
	"prod-ap-1":  "c-m-6k2pz7va",
	// Rancher's own upgrades in the example: a provisioned and an imported cluster (the
	// imported one's management Cluster is in the example's local cluster already).
	"prod-eu-2":   "c-m-8x2kq7vd",
	"edge-rke2-7": "c-9qzbw",
}

// Clusters the stand-in knows besides the example's: one whose API server refuses
// connections, one no test token but the administrator's may see.
const (
	downID, downName     = "c-m-down0001", "offline-1"
	hiddenID, hiddenName = "c-m-hidden01", "secret-1"
)

// Tokens. The secret halves are canaries: no output may carry them.
const (
	opsToken   = "token-ops01:RANCHER-CANARY-ops-5f1c9e"   // member of the example's clusters
	devToken   = "token-dev01:RANCHER-CANARY-dev-77ab20"   // dev-1, staging-1 and the down cluster
	adminToken = "token-admin:RANCHER-CANARY-admin-0d93b4" // every cluster
)

var tokenSecret = regexp.MustCompile(`RANCHER-CANARY-[a-z]+-[0-9a-f]+`)

type rancherFleet struct {
	standIn *testenv.RancherStandIn
	dir     string
	local   *rest.Config // the management cluster, which holds Rancher's cluster list
}

// kubeconfig writes a kubeconfig with one context, "rancher", whose server is the stand-in's
// URL (the context Rancher's kubeconfigs.ext.cattle.io kubeconfigs call "rancher"), with token.
func (f *rancherFleet) kubeconfig(t *testing.T, token string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["rancher"] = &clientcmdapi.Cluster{Server: f.standIn.URL(), CertificateAuthorityData: f.standIn.CAData()}
	kc.AuthInfos["rancher"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["rancher"] = &clientcmdapi.Context{Cluster: "rancher", AuthInfo: "rancher"}
	kc.CurrentContext = "rancher"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// startRancherFleet replays each example cluster into its own API server behind the log proxy
// and mounts them all behind the stand-in.
func startRancherFleet(t *testing.T, root string, servers []exampleServer) *rancherFleet {
	t.Helper()
	ctx := t.Context()
	f := &rancherFleet{standIn: testenv.NewRancherStandIn(), dir: root}
	t.Cleanup(f.standIn.Close)
	var local *rest.Config
	for _, es := range servers {
		h, err := testenv.LogProxy(es.env.Config, es.logs)
		if err != nil {
			t.Fatalf("%s: %v", es.name, err)
		}
		f.standIn.AddCluster(exampleClusterIDs[es.name], h)
		if es.name == "local" {
			local = es.env.Config
		}
	}
	if err := f.standIn.AddDownCluster(downID); err != nil {
		t.Fatal(err)
	}
	f.standIn.AddCluster(hiddenID, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the stand-in let a request for the hidden cluster through: %s", r.URL)
	}))
	f.local = local
	if err := testenv.InstallCRDs(ctx, local, testenv.RancherManagementClusterCRD()); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(local)
	if err != nil {
		t.Fatal(err)
	}
	mgmt := dyn.Resource(schema.GroupVersionResource{Group: "management.cattle.io", Version: "v3", Resource: "clusters"})
	names := map[string]string{downID: downName, hiddenID: hiddenName}
	for name, id := range exampleClusterIDs {
		names[id] = name
	}
	for id, display := range names {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "management.cattle.io/v3", "kind": "Cluster",
			"metadata": map[string]any{"name": id},
			"spec":     map[string]any{"displayName": display},
		}}
		if _, err := mgmt.Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating management cluster %s: %v", id, err)
		}
	}
	all := []string{downID, hiddenID}
	var example []string
	for _, id := range exampleClusterIDs {
		all = append(all, id)
		example = append(example, id)
	}
	f.standIn.Allow(opsToken, example...)
	f.standIn.Allow(devToken, exampleClusterIDs["dev-1"], exampleClusterIDs["staging-1"], downID)
	f.standIn.Allow(adminToken, all...)
	return f
}

// noSecret fails when any output carries the secret half of a token.
func noSecret(t *testing.T, what string, data []byte) {
	t.Helper()
	if m := tokenSecret.Find(data); m != nil {
		t.Errorf("%s carries the Rancher token secret %s", what, m)
	}
}

type reportClusters struct {
	Clusters []struct {
		Name, Server, Context, ContextServer string
	} `json:"clusters"`
}

func rancherProxy(t *testing.T, f *rancherFleet) {
	ops := f.kubeconfig(t, opsToken)

	offOut, offErr, offCode := run(t, "scan", "--from", example, "--now", now, "-o", "json")
	offline := parse(t, offOut, offErr)

	var live scanResult
	var liveCode int
	t.Run("scan matches the offline scan", func(t *testing.T) {
		start := time.Now()
		out, errOut, code := run(t, "scan", "--kubeconfig", ops, "--context", "rancher", "--rancher", "--now", now, "-o", "json", "-q")
		t.Logf("scan --rancher of %d clusters through the stand-in: %s", len(exampleClusters), time.Since(start).Round(time.Millisecond))
		live, liveCode = parse(t, out, errOut), code
		noSecret(t, "scan output", []byte(out+errOut))
		if code != offCode {
			t.Errorf("scan --rancher exit %d, offline exit %d; stderr: %s", code, offCode, errOut)
		}
		if len(live.Errors) != 0 {
			t.Errorf("scan --rancher errors: %+v", live.Errors)
		}
		if d := diff(offline.keys(), live.keys()); d != "" {
			t.Errorf("scan --rancher findings differ from offline (- offline only, + through Rancher only):\n%s", d)
		}
		if d := diff(offline.roots(), live.roots()); d != "" {
			t.Errorf("scan --rancher incidents differ from offline:\n%s", d)
		}
		// Clusters are named by display name, read through the proxy, and commands about them
		// are aimed at the Rancher context with --server (the kubeconfig has no context of
		// their own), the local cluster too (through its proxy path, which surely reaches it).
		var rc reportClusters
		if err := json.Unmarshal([]byte(out), &rc); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range rc.Clusters {
			got = append(got, c.Name+" "+strings.TrimPrefix(c.Server, f.standIn.URL())+" "+c.Context+" "+strings.TrimPrefix(c.ContextServer, f.standIn.URL()))
		}
		sort.Strings(got)
		var want []string
		for name, id := range exampleClusterIDs {
			server := "/k8s/clusters/" + id
			want = append(want, name+" "+server+" rancher "+server)
		}
		sort.Strings(want)
		if d := diff(want, got); d != "" {
			t.Errorf("report clusters (name server context contextServer) differ (- want, + got):\n%s", d)
		}
		if !strings.Contains(out, "kubectl --kubeconfig "+ops+" --context rancher --server "+f.standIn.URL()+"/k8s/clusters/c-m-4x7kq2zt ") {
			t.Errorf("no command about prod-eu-1 aimed at the Rancher context of %s with --server its proxy URL", ops)
		}
		if n := f.standIn.Requests(hiddenID); n != 0 {
			t.Errorf("the scan asked for the cluster the token may not see %d times", n)
		}
	})

	t.Run("collect through Rancher scans offline the same", func(t *testing.T) {
		bundle := filepath.Join(t.TempDir(), "collected.tar.gz")
		if _, errOut, code := run(t, "collect", "--kubeconfig", ops, "--rancher", "-o", bundle, "-q"); code != 0 {
			t.Fatalf("collect --rancher exit %d: %s", code, errOut)
		}
		noSecret(t, "the collected bundle", untarAll(t, bundle))
		out, errOut, code := run(t, "scan", "--from", bundle, "--now", now, "-o", "json")
		collected := parse(t, out, errOut)
		if code != liveCode {
			t.Errorf("collected bundle exit %d, scan --rancher exit %d", code, liveCode)
		}
		if d := diff(live.keys(), collected.keys()); d != "" {
			t.Errorf("collected bundle findings differ from scan --rancher:\n%s", d)
		}
		if !strings.Contains(out, "kubectl --context rancher --server "+f.standIn.URL()+"/k8s/clusters/") {
			t.Errorf("the bundle's commands are not aimed through the Rancher context and the proxy URL it was collected with")
		}
	})

	t.Run("preflight and fix plan through Rancher", func(t *testing.T) {
		_, offErr, offPre := run(t, "preflight", "--from", example, "--now", now, "--offline-registry", "-o", "json")
		out, errOut, code := run(t, "preflight", "--kubeconfig", ops, "--rancher", "--now", now, "--offline-registry", "-o", "json", "-q")
		noSecret(t, "preflight output", []byte(out+errOut))
		if code != offPre {
			t.Errorf("preflight --rancher exit %d, offline %d\n%s\n%s", code, offPre, errOut, offErr)
		}
		out, errOut, code = run(t, "fix", "--kubeconfig", ops, "--rancher", "--now", now, "--offline-registry", "-o", "json", "-q")
		noSecret(t, "fix output", []byte(out+errOut))
		_, _, offFix := run(t, "fix", "--from", example, "--now", now, "--offline-registry", "-o", "json", "-q")
		if code != offFix {
			t.Errorf("fix --rancher exit %d, offline %d: %s", code, offFix, errOut)
		}
		if !strings.Contains(out, "--server "+f.standIn.URL()+"/k8s/clusters/") {
			t.Errorf("fix --rancher prints no command aimed through the proxy:\n%.2000s", out)
		}
	})

	t.Run("serve through Rancher", func(t *testing.T) {
		addr, errOut := runServe(t, "--kubeconfig", ops, "--rancher")
		findings := httpGet(t, "http://"+addr+"/api/v1/findings")
		noSecret(t, "serve findings", findings)
		noSecret(t, "serve stderr", []byte(errOut.String()))
		for _, want := range []string{`"prod-eu-1"`, `"edge-arm-1"`, "fleet/agent-upgrade-stuck"} {
			if !bytes.Contains(findings, []byte(want)) {
				t.Errorf("serve --rancher findings lack %s", want)
			}
		}
	})

	t.Run("serve --rancher sharded over three replicas", func(t *testing.T) {
		serveShardedThroughRancher(t, ops)
	})

	// The management Cluster of dev-1 is deleted from and put back on local, as deleting and
	// re-importing a cluster in Rancher does: serve stops and starts watching it.
	t.Run("serve --rancher follows Rancher's cluster list", func(t *testing.T) {
		addr, errOut := runServe(t, "--kubeconfig", ops, "--rancher", "--rancher-refresh", "300ms")
		id := exampleClusterIDs["dev-1"]
		// unstick_scan_errors has a series for every watched cluster (0 when all was read);
		// the series about dev-1 derived from local's Fleet objects stay, as they should.
		watched := func() bool {
			return bytes.Contains(httpGet(t, "http://"+addr+"/metrics"), []byte(`unstick_scan_errors{cluster="dev-1"}`))
		}
		if !watched() {
			t.Fatalf("dev-1 is not watched at start")
		}
		dyn, err := dynamic.NewForConfig(f.local)
		if err != nil {
			t.Fatal(err)
		}
		mgmt := dyn.Resource(schema.GroupVersionResource{Group: "management.cattle.io", Version: "v3", Resource: "clusters"})
		if err := mgmt.Delete(t.Context(), id, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		removed := "rancher: cluster " + id + " (dev-1) removed; stopped watching it and dropped its series"
		if !waitFor(20*time.Second, func() bool { return strings.Contains(errOut.String(), removed) && !watched() }) {
			t.Fatalf("20s after dev-1 left Rancher's list: line said %v, still watched %v\n%s", strings.Contains(errOut.String(), removed), watched(), errOut.String())
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "management.cattle.io/v3", "kind": "Cluster",
			"metadata": map[string]any{"name": id},
			"spec":     map[string]any{"displayName": "dev-1"},
		}}
		if _, err := mgmt.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		added := "rancher: cluster " + id + " (dev-1) added; watching it"
		if !waitFor(30*time.Second, func() bool { return strings.Contains(errOut.String(), added) && watched() }) {
			t.Fatalf("30s after dev-1 came back to Rancher's list: line said %v, watched %v\n%s", strings.Contains(errOut.String(), added), watched(), errOut.String())
		}
		noSecret(t, "serve stderr", []byte(errOut.String()))
	})

	t.Run("--rancher-url with the token from the environment", func(t *testing.T) {
		ca := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(ca, f.standIn.CAData(), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("RANCHER_TOKEN", opsToken)
		out, errOut, code := run(t, "scan", "--rancher-url", f.standIn.URL(), "--certificate-authority", ca, "--kubeconfig", filepath.Join(t.TempDir(), "none"), "--now", now, "-o", "json", "-q")
		noSecret(t, "scan --rancher-url output", []byte(out+errOut))
		got := parse(t, out, errOut)
		if code != liveCode {
			t.Errorf("scan --rancher-url exit %d, want %d: %s", code, liveCode, errOut)
		}
		if d := diff(live.keys(), got.keys()); d != "" {
			t.Errorf("scan --rancher-url findings differ from scan --rancher:\n%s", d)
		}
	})

	t.Run("a cluster that is down is an error of its own and the scan goes on", func(t *testing.T) {
		out, errOut, code := run(t, "scan", "--kubeconfig", f.kubeconfig(t, devToken), "--rancher", "--now", now, "-o", "json", "-q")
		noSecret(t, "scan output", []byte(out+errOut))
		r := parse(t, out, errOut)
		var errs []string
		for _, e := range r.Errors {
			errs = append(errs, e.Cluster+": "+e.Message)
			if e.Cluster != downName {
				t.Errorf("an error about %s, want only the down cluster's: %s", e.Cluster, e.Message)
			}
		}
		if len(errs) == 0 {
			t.Fatalf("no error for the down cluster %s", downName)
		}
		t.Logf("errors: %s", strings.Join(errs, "; "))
		if !strings.Contains(errs[0], "cluster "+downName+" (through Rancher's proxy)") || !strings.Contains(errs[0], "Rancher answered 502") {
			t.Errorf("the error does not name the cluster and what Rancher answered: %s", errs[0])
		}
		// The clusters that answered are judged as offline.
		var want []string
		for _, k := range offline.keys() {
			if strings.Contains(k, " dev-1→") || strings.Contains(k, " staging-1→") {
				want = append(want, k)
			}
		}
		if d := diff(want, r.keys()); d != "" {
			t.Errorf("findings of the clusters that answered differ from offline:\n%s", d)
		}
		// dev-1 and staging-1 are the example's healthy clusters: nothing at or above error was
		// found in what was read, and a cluster was not read — the verdict is incomplete, exit 4.
		var v struct {
			Verdict string `json:"verdict"`
		}
		_ = json.Unmarshal([]byte(out), &v)
		if code != 4 || v.Verdict != "incomplete" {
			t.Errorf("exit %d, verdict %q; want 4, incomplete; stderr: %s", code, v.Verdict, errOut)
		}
	})

	t.Run("a wrong token is refused, and says so without printing it", func(t *testing.T) {
		wrong := "token-wrong:RANCHER-CANARY-wrong-aa11bb"
		out, errOut, code := run(t, "scan", "--kubeconfig", f.kubeconfig(t, wrong), "--rancher", "-q")
		noSecret(t, "scan output", []byte(out+errOut))
		if code != 1 || !strings.Contains(errOut, "401") {
			t.Errorf("exit %d, stderr %q; want 1 and the 401 named", code, errOut)
		}
		// The stand-in answers a cluster the token may not see as Rancher does.
		req, _ := http.NewRequest(http.MethodGet, f.standIn.URL()+"/k8s/clusters/"+hiddenID+"/api", nil)
		req.Header.Set("Authorization", "Bearer "+opsToken)
		rt, err := rest.TransportFor(&rest.Config{Host: f.standIn.URL(), TLSClientConfig: rest.TLSClientConfig{CAData: f.standIn.CAData()}})
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Transport: rt}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("hidden cluster: %d, want 403", resp.StatusCode)
		}
	})

	// Last: it changes the fleet. fix --apply writes through Rancher's proxy with the token,
	// as a plan made through it aims.
	t.Run("fix --apply through Rancher", func(t *testing.T) {
		backup := filepath.Join(t.TempDir(), "backup")
		args := []string{"fix", "--kubeconfig", ops, "--rancher", "--now", now, "--offline-registry", "-q",
			"--only", "helm/", "--only-cluster", "prod-eu-1", "--max-risk", "medium", "--apply", "--yes", "--backup-dir", backup, "--verify-timeout", "20s"}
		out, errOut, code := runCtx(t.Context(), t, "", args...)
		noSecret(t, "fix --apply output", []byte(out+errOut))
		if code != 0 {
			t.Fatalf("fix --rancher --apply exit %d\n%s\n%s", code, out, errOut)
		}
		out, errOut, _ = run(t, "scan", "--kubeconfig", ops, "--rancher", "--now", now, "-o", "json", "-q", "--only", "helm/", "--only-cluster", "prod-eu-1")
		for _, k := range parse(t, out, errOut).keys() {
			if strings.HasPrefix(k, "helm/release-pending prod-eu-1") {
				t.Errorf("after fix --apply through Rancher the release is still pending: %s", k)
			}
		}
	})

	t.Run("without Steve the clusters are listed on the local cluster", func(t *testing.T) {
		f.standIn.DisableSteve()
		cfg := &rest.Config{Host: f.standIn.URL(), BearerToken: adminToken, TLSClientConfig: rest.TLSClientConfig{CAData: f.standIn.CAData()}}
		cs, err := source.DiscoverRancherClusters(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range cs {
			got = append(got, c.ID+"="+c.Name())
		}
		want := []string{downID + "=" + downName, hiddenID + "=" + hiddenName}
		for name, id := range exampleClusterIDs {
			want = append(want, id+"="+name)
		}
		sort.Strings(want)
		if d := diff(want, got); d != "" {
			t.Errorf("clusters listed on local differ:\n%s", d)
		}
		// A member of some clusters may not read local: the error says what was tried.
		cfg.BearerToken = devToken
		_, err = source.DiscoverRancherClusters(t.Context(), cfg)
		if err == nil || !strings.Contains(err.Error(), "403") || strings.Contains(err.Error(), "RANCHER-CANARY") {
			t.Errorf("discovery without Steve and without access to local: %v", err)
		}
	})
}

// untarAll is every file of a .tar.gz, concatenated.
func untarAll(t *testing.T, path string) []byte {
	var all []byte
	for _, b := range untar(t, path) {
		all = append(all, b...)
	}
	return all
}
