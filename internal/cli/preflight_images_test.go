package cli

import (
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// closedPort is a loopback address nothing listens on: a registry that cannot be reached.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// pushArm64 pushes a small linux/arm64 image to host/repoTag.
func pushArm64(t *testing.T, host, repoTag string) {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "arm64"
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

type preflightImages struct {
	Verdict         string `json:"verdict"`
	Registry        string `json:"registry"`
	ImagesChecked   int    `json:"imagesChecked"`
	ImagesUnchecked int    `json:"imagesUnchecked"`
}

func preflightJSON(t *testing.T, args ...string) (preflightImages, int) {
	t.Helper()
	out, stderr, code := run(t, append([]string{"preflight", "-o", "json"}, args...)...)
	var res preflightImages
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: exit %d, no JSON: %v\n%s", args, code, err, stderr)
	}
	return res, code
}

// Images a registry answered for give a verdict; images no registry answered for never give
// "go": the verdict is incomplete (exit 4) unless the user chose --offline-registry, and the
// footer counts checked and unchecked references apart.
func TestPreflightImageVerdictIsHonest(t *testing.T) {
	t.Run("registry answers", func(t *testing.T) {
		srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
		t.Cleanup(srv.Close)
		host := strings.TrimPrefix(srv.URL, "http://")
		for _, repo := range []string{"ops/os-upgrade:v2026.11.2", "rancher/system-upgrade-controller:v0.20.1", "rancher/kubectl:v1.30.3"} {
			pushArm64(t, host, repo)
		}
		bundle := trapBundle(t, host)
		res, code := preflightJSON(t, "--from", bundle, "--insecure-registry", host)
		if code != ExitOK || res.Verdict != "go" || res.ImagesChecked != 3 || res.ImagesUnchecked != 0 {
			t.Errorf("exit %d, %+v; want go, 3 checked", code, res)
		}
		out, _, _ := run(t, "preflight", "--from", bundle, "--insecure-registry", host)
		if !strings.Contains(out, "3 image references, 3 checked, 0 could not be checked") {
			t.Errorf("footer:\n%s", out)
		}
	})
	t.Run("registry unreachable", func(t *testing.T) {
		host := closedPort(t)
		bundle := trapBundle(t, host)
		res, code := preflightJSON(t, "--from", bundle, "--registry-timeout", "5s")
		if code != ExitIncomplete || res.Verdict != verdictIncomplete || res.ImagesChecked != 0 || res.ImagesUnchecked != 3 {
			t.Errorf("exit %d, %+v; want incomplete (exit %d), 3 unchecked", code, res, ExitIncomplete)
		}
		out, stderr, code := run(t, "preflight", "--from", bundle, "--registry-timeout", "5s")
		if code != ExitIncomplete || !strings.Contains(out, "INCOMPLETE") || !strings.Contains(out, "3 images could not be verified") ||
			!strings.Contains(out, "0 checked, 3 could not be checked") || strings.Contains(out, "GO —") {
			t.Errorf("exit %d\n%s\n%s", code, out, stderr)
		}
		if _, code := preflightJSON(t, "--from", bundle, "--registry-timeout", "5s", "--allow-incomplete"); code != ExitOK {
			t.Errorf("--allow-incomplete: exit %d, want 0", code)
		}
		res, code = preflightJSON(t, "--from", bundle, "--offline-registry")
		if code != ExitOK || res.Verdict != "go" || res.Registry != "offline" || res.ImagesUnchecked != 3 {
			t.Errorf("--offline-registry: exit %d, %+v; want go with 3 unchecked", code, res)
		}
		out, _, _ = run(t, "preflight", "--from", bundle, "--offline-registry")
		if !strings.Contains(out, "Images not checked (--offline-registry was given)") {
			t.Errorf("--offline-registry: the report does not say images were not checked:\n%s", out)
		}
	})
}
