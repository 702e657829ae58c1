package testenv

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The CRDs the environment serves, read from the released modules in the Go module cache
// (downloaded through the module proxy) rather than copied into this repository.
const (
	FleetModule   = "github.com/rancher/fleet"
	FleetVersion  = "v0.16.0"
	fleetCRDsFile = "charts/fleet-crd/templates/crds.yaml"

	SUCModule   = "github.com/rancher/system-upgrade-controller"
	SUCVersion  = "v0.20.1"
	sucCRDsFile = "pkg/crds/yaml/generated/upgrade.cattle.io_plans.yaml"

	// CAPI's core CRDs, as Rancher's embedded capi-controller-manager installs them on the
	// management cluster: v1beta2 is the storage version, v1beta1 still served. The base
	// files carry no conversion webhook (kustomize patches add it), so the test server
	// converts between the two by apiVersion only: scenarios write v1beta2.
	CAPIModule  = "sigs.k8s.io/cluster-api"
	CAPIVersion = "v1.14.2"
	capiCRDsDir = "core/config/crd/bases"
)

// capiKinds are the CAPI CRDs unstick reads (internal/source's live resources).
var capiKinds = []string{"clusters", "machines", "machinesets", "machinedeployments", "machinehealthchecks"}

// rancherCRDs are stand-ins for Rancher's own CRDs (see the file's header for why they are
// not read from a module).
//
//go:embed testdata/crds/rancher.yaml
var rancherCRDs []byte

var (
	crdMu     sync.Mutex
	crdCached []*apiextensionsv1.CustomResourceDefinition
)

// CRDs returns Fleet's CRDs, SUC's Plan CRD, CAPI's core CRDs and the stand-ins for Rancher's own, fresh
// copies on each call.
func CRDs(ctx context.Context) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crdMu.Lock()
	defer crdMu.Unlock()
	if crdCached == nil {
		dirs, err := moduleDirs(ctx, FleetModule+"@"+FleetVersion, SUCModule+"@"+SUCVersion, CAPIModule+"@"+CAPIVersion)
		if err != nil {
			return nil, err
		}
		var all []*apiextensionsv1.CustomResourceDefinition
		files := []string{
			filepath.Join(dirs[FleetModule], fleetCRDsFile),
			filepath.Join(dirs[SUCModule], sucCRDsFile),
		}
		rancher, err := parseCRDs(rancherCRDs, "testdata/crds/rancher.yaml")
		if err != nil {
			return nil, err
		}
		all = append(all, rancher...)
		// CAPI's files are plain CRDs, not chart templates: their descriptions quote Go
		// templates ("{{ .machineSet.name }}") that must stay as they are.
		for _, k := range capiKinds {
			f := filepath.Join(dirs[CAPIModule], capiCRDsDir, "cluster.x-k8s.io_"+k+".yaml")
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("testenv: reading CRDs: %w", err)
			}
			crds, err := parseCRDs(data, f)
			if err != nil {
				return nil, err
			}
			all = append(all, crds...)
		}
		for _, f := range files {
			crds, err := readCRDFile(f)
			if err != nil {
				return nil, err
			}
			all = append(all, crds...)
		}
		crdCached = all
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, len(crdCached))
	for i, c := range crdCached {
		out[i] = c.DeepCopy()
	}
	return out, nil
}

// moduleDirs runs `go mod download -json` outside any module (so no go.mod or go.sum is
// touched) and returns each module's directory in the module cache.
func moduleDirs(ctx context.Context, mods ...string) (map[string]string, error) {
	goBin, err := goTool()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, goBin, append([]string{"mod", "download", "-json"}, mods...)...)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GO111MODULE=on")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	dirs := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	var errs []string
	for dec.More() {
		var m struct{ Path, Version, Dir, Error string }
		if dec.Decode(&m) != nil {
			break
		}
		if m.Error != "" {
			errs = append(errs, m.Path+"@"+m.Version+": "+m.Error)
		}
		if m.Dir != "" {
			dirs[m.Path] = m.Dir
		}
	}
	if err != nil || len(errs) > 0 || len(dirs) != len(mods) {
		return nil, fmt.Errorf("testenv: downloading %s for their CRDs: %v %s %s",
			strings.Join(mods, " "), err, strings.Join(errs, "; "), strings.TrimSpace(stderr.String()))
	}
	return dirs, nil
}

// readCRDFile reads a multi-document CRD file. Lines that are only a Helm template action
// ({{- if ... }}, {{- end }}) are dropped, as a chart's crds.yaml may wrap CRDs in them;
// template expressions inside a value cannot be rendered here and are an error.
func readCRDFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("testenv: reading CRDs: %w", err)
	}
	data, err = stripTemplateLines(data, path)
	if err != nil {
		return nil, err
	}
	return parseCRDs(data, path)
}

// parseCRDs reads the CRDs of one multi-document file's contents (no template lines).
func parseCRDs(data []byte, path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var crds []*apiextensionsv1.CustomResourceDefinition
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(doc, &crd); err != nil {
			return nil, fmt.Errorf("testenv: parsing a CRD in %s: %w", path, err)
		}
		if crd.Kind == "" && crd.Name == "" {
			continue
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("testenv: %s holds a %s, not a CustomResourceDefinition", path, crd.Kind)
		}
		crds = append(crds, &crd)
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("testenv: no CRDs in %s", path)
	}
	return crds, nil
}

func stripTemplateLines(data []byte, path string) ([]byte, error) {
	if !bytes.Contains(data, []byte("{{")) {
		return data, nil
	}
	var out bytes.Buffer
	for i, line := range strings.SplitAfter(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "{{") && strings.HasSuffix(t, "}}") && strings.Count(t, "{{") == 1 {
			continue
		}
		if strings.Contains(t, "{{") && !strings.HasPrefix(t, "#") {
			return nil, fmt.Errorf("testenv: %s:%d holds a Helm template expression this loader cannot render: %s", path, i+1, t)
		}
		out.WriteString(line)
	}
	return out.Bytes(), nil
}
