package testenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick"
)

// The test bed's programs are built in one module graph with the suite (bedmodule.go), so
// that a fresh machine compiles client-go and the rest once. That holds only while the graph
// keeps every version unstick's go.mod asks for: this test resolves the bed's module as its
// builds do and names each module a program of the bed needs newer than go.mod has it.
func TestBedModuleKeepsTheProjectVersions(t *testing.T) {
	reqs, err := projectRequires()
	if err != nil {
		t.Fatalf("reading unstick's go.mod: %v", err)
	}
	run, work, cleanup, err := newBedModule(t.Context(), filepath.Join(t.TempDir(), "bed"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	out, err := run("list", "-m", "-json", "all")
	if err != nil {
		t.Fatal(err)
	}
	bed := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m modVersion
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -m -json all in %s: %v", work, err)
		}
		bed[m.Path] = m.Version
	}
	for _, want := range []string{"k8s.io/client-go", kubernetesModule, FleetModule, SUCModule, "sigs.k8s.io/kwok"} {
		if bed[want] == "" {
			t.Errorf("the bed's graph holds no %s", want)
		}
	}
	if got := bed["k8s.io/client-go"]; got != stagingVersion {
		t.Errorf("the bed builds on client-go %s, want Kubernetes' own %s", got, stagingVersion)
	}
	var raise []string
	shared := 0
	for _, r := range reqs {
		v, ok := bed[r.Path]
		if !ok || slices.Contains(bedOwn, r.Path) {
			continue
		}
		shared++
		if v != r.Version {
			raise = append(raise, fmt.Sprintf("%s: go.mod has %s, the test bed's programs need %s", r.Path, r.Version, v))
		}
	}
	if len(raise) > 0 {
		t.Errorf("%d of unstick's %d requirements differ in the test bed's module graph, so a fresh machine compiles them and everything importing them twice. Raise them in go.mod (go get MODULE@VERSION):\n  %s",
			len(raise), shared, strings.Join(raise, "\n  "))
	}
	if shared < 50 {
		t.Errorf("only %d of go.mod's requirements are in the test bed's graph; the bed module has lost them", shared)
	}
}

// Every process of the bed computes one cache key: from the go.mod the program was built with,
// not one found from its working directory. A process started outside the module (the
// detached half of hack/testenv.sh start runs in the environment's directory) once computed
// another key and built a second copy of every program.
func TestBedModuleKeyIgnoresTheWorkingDirectory(t *testing.T) {
	onDisk, err := filepath.Abs(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := readRequires(onDisk)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	got, err := parseRequires([]byte(unstick.GoMod()))
	if err != nil {
		t.Fatalf("outside the module: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("outside the module the requirements are\n  %v\nwhere the repository's go.mod has\n  %v", got, want)
	}
	if len(want) < 50 {
		t.Errorf("only %d requirements read from %s", len(want), onDisk)
	}
}
