//go:build unix

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// asMain makes the test binary run this command's main, so the tests start the program as a
// user does, and its detached half (the same executable, the same environment) is it too.
const asMain = "UNSTICK_HACK_TESTENV_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// `hack/testenv.sh start` run from outside the module, with no etcd template made yet, starts
// on the programs already built: a process that computed another cache key would build a
// second copy of kube-apiserver and etcd (NoBuildEnv makes that an error here), and the
// detached half, running in DIR, once did. Stop then ends the server.
func TestStartOutsideTheModuleBuildsNothing(t *testing.T) {
	cache := linkedCache(t)
	dir := filepath.Join(t.TempDir(), "env")
	outside := t.TempDir()
	t.Cleanup(func() { _ = testenv.Stop(dir) })
	runMain(t, cache, outside, "start", dir)
	url := checkServing(t, dir)
	if !answers(url) {
		t.Fatalf("nothing answers at %s, the URL start reported", url)
	}
	if made := templates(t, cache); len(made) != 1 {
		t.Errorf("etcd templates after one start from an empty template cache: %v, want one", made)
	}
	runMain(t, cache, outside, "stop", dir)
	if _, ok := testenv.Ready(dir); ok {
		t.Errorf("%s still reports ready after stop", dir)
	}
	if answers(url) {
		t.Errorf("the server at %s still answers after stop", url)
	}
	if left, err := os.ReadDir(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stop left %s behind, holding %v", dir, left)
	}
}

// Two starts at once, with no etcd template made yet, both come up on one template: one
// process makes it, the other waits for it and copies it.
func TestConcurrentStartsShareOneTemplate(t *testing.T) {
	cache := linkedCache(t)
	outside := t.TempDir()
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	for i, d := range dirs {
		t.Cleanup(func() { _ = testenv.Stop(d) })
		wg.Go(func() { errs[i] = program(t, cache, outside, "start", d) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	made := 0
	for _, d := range dirs {
		checkServing(t, d)
		log, err := os.ReadFile(filepath.Join(d, "testenv.log"))
		if err != nil {
			t.Fatal(err)
		}
		made += strings.Count(string(log), "made the etcd template")
	}
	if made != 1 {
		t.Errorf("%d processes made the etcd template, want 1", made)
	}
	if got := templates(t, cache); len(got) != 1 {
		t.Errorf("etcd templates after two starts: %v, want one", got)
	}
}

// linkedCache is a cache directory for the program holding links to this machine's
// kube-apiserver and etcd (built first, in the machine's cache, if they never were) under
// this process's cache key, and no etcd template.
func linkedCache(t *testing.T) string {
	t.Helper()
	apiserver, etcd, err := testenv.Binaries(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := testenv.BinaryDir()
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	to := filepath.Join(cache, filepath.Base(keyed))
	if err := os.Mkdir(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{apiserver, etcd} {
		if err := os.Symlink(p, filepath.Join(to, filepath.Base(p))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(to, "complete"), []byte(testenv.KubernetesVersion+" "+testenv.EtcdVersion+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cache
}

// runMain runs the program with args in dir, with cache as its cache and building forbidden.
func runMain(t *testing.T, cache, dir string, args ...string) {
	t.Helper()
	if err := program(t, cache, dir, args...); err != nil {
		t.Fatal(err)
	}
}

// program is runMain's run, for any goroutine.
func program(t *testing.T, cache, dir string, args ...string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), asMain+"=1", testenv.CacheDirEnv+"="+cache, testenv.NoBuildEnv+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("testenv %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}

// checkServing reads the server through the kubeconfig start wrote: its system namespace and
// the Fleet CRDs the template holds.
func checkServing(t *testing.T, dir string) (url string) {
	t.Helper()
	url, ok := testenv.Ready(dir)
	if !ok {
		t.Fatalf("%s is not ready", dir)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, testenv.KubeconfigDirect))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := cs.Discovery().ServerResourcesForGroupVersion("fleet.cattle.io/v1alpha1")
	if err != nil || len(rl.APIResources) == 0 {
		t.Errorf("the server in %s serves no Fleet resources: %v", dir, err)
	}
	return url
}

// templates lists the etcd templates in cache, and anything else left in their directory
// but the lock files.
func templates(t *testing.T, cache string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(cache, "etcd-templates"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".lock") {
			out = append(out, e.Name())
		}
	}
	return out
}

// answers reports whether anything serves HTTPS at url.
func answers(url string) bool {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get(url + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}
