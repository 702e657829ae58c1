package acceptance

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/unstick-dev/unstick/internal/cli"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// authProxy puts HTTP basic auth in front of the registry, as a private mirror does.
func authProxy(t *testing.T, registryHost, user, pass string) string {
	t.Helper()
	target, _ := url.Parse("http://" + registryHost)
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="mirror"`)
			w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`))
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestPreflightLiveWithPullSecret runs preflight and images against a real kube-apiserver
// holding the acceptance cluster, with the images behind a mirror that demands credentials:
// only the Plan's imagePullSecret (read live, never stored) opens it. The verdict is the
// offline one; without the secret the images are "unauthorized", not missing.
func TestPreflightLiveWithPullSecret(t *testing.T) {
	reg := startRegistry(t)
	pushImage(t, reg+"/rancher/kubectl:v1.30.3", "amd64")
	pushImage(t, reg+"/rancher/system-upgrade-controller:v0.20.1", "amd64")
	mirror := authProxy(t, reg, "robot", "s3cret")

	dir := writeBundle(t, mirror)
	auth := base64.StdEncoding.EncodeToString([]byte("robot:s3cret"))
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{mirror: map[string]string{"auth": auth}}})
	secret := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: mirror-creds
  namespace: system-upgrade
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: %s
`, base64.StdEncoding.EncodeToString(cfg))
	if err := os.WriteFile(filepath.Join(dir, "secret.yaml"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	plans, _ := os.ReadFile(filepath.Join(dir, "plans.yaml"))
	plans = []byte(strings.Replace(string(plans), "  serviceAccountName: system-upgrade\n", "  serviceAccountName: system-upgrade\n  imagePullSecrets:\n  - name: mirror-creds\n", 1))
	if err := os.WriteFile(filepath.Join(dir, "plans.yaml"), plans, 0o644); err != nil {
		t.Fatal(err)
	}

	env := testenv.Start(t)
	if _, err := testenv.Load(t.Context(), env.Config, dir, testenv.LoadOptions{}); err != nil {
		t.Fatalf("loading the bundle: %v", err)
	}

	out, stderr, code := run(t, "preflight", "--kubeconfig", env.Kubeconfig, "--insecure-registry", mirror, "-o", "json")
	if code != cli.ExitFindings {
		t.Fatalf("live preflight: exit %d\n%s\n%s", code, out, stderr)
	}
	var res struct {
		Verdict  string `json:"verdict"`
		Blocking []struct {
			RootCause blockingFinding   `json:"rootCause"`
			Symptoms  []blockingFinding `json:"symptoms"`
		} `json:"blocking"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, b := range res.Blocking {
		ids = append(ids, b.RootCause.ID)
		for _, f := range b.Symptoms {
			ids = append(ids, f.ID)
		}
	}
	joined := strings.Join(ids, " ")
	if res.Verdict != "no-go" || !strings.Contains(joined, "suc/image-missing") || !strings.Contains(joined, "suc/image-arch") {
		t.Errorf("live preflight: verdict %s, blocking %v\n%s", res.Verdict, ids, out)
	}
	if strings.Contains(out, "robot") || strings.Contains(out, "s3cret") || strings.Contains(out, auth) {
		t.Error("the pull secret's credentials leaked into the report")
	}

	// Without the secret the mirror refuses: existence cannot be known, nothing is "missing".
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Secrets("system-upgrade").Delete(t.Context(), "mirror-creds", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = run(t, "images", "--kubeconfig", env.Kubeconfig, "--insecure-registry", mirror, "-o", "csv")
	if code != cli.ExitOK {
		t.Fatalf("live images: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, mirror+"/rancher/kubectl:v1.29.9,") || strings.Contains(out, ",missing,") || !strings.Contains(out, ",unauthorized,") {
		t.Errorf("without the pull secret every mirror image should be unauthorized:\n%s", out)
	}
	if !strings.Contains(stderr, "mirror-creds does not exist") {
		t.Errorf("the missing pull secret should be reported on stderr:\n%s", stderr)
	}
}
