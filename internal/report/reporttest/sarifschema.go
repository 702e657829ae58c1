package reporttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The official SARIF 2.1.0 schema (OASIS, errata 01) is not committed here: tests take it
// from a Go module that embeds it verbatim, fetched through the Go module proxy into the
// module cache and verified against the checksum database like any module. The module is
// not a dependency of unstick; it is downloaded in a throw-away module so go.mod stays clean.
const (
	schemaModule  = "github.com/owenrumney/go-sarif/v3"
	schemaVersion = "v3.3.1"
	schemaFile    = "pkg/report/v210/sarif/schema.go"
	schemaConst   = "schema"
	// SARIFSchemaID is the $id the schema declares.
	SARIFSchemaID = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)

var (
	schemaOnce sync.Once
	schemaVal  *jsonschema.Schema
	schemaErr  error
)

// SARIFSchema returns the compiled SARIF 2.1.0 schema. UNSTICK_SARIF_SCHEMA may name a local
// copy of sarif-schema-2.1.0.json instead (for a machine without the module proxy).
func SARIFSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	schemaOnce.Do(func() { schemaVal, schemaErr = loadSchema() })
	if schemaErr != nil {
		t.Fatalf("the SARIF 2.1.0 schema is needed to validate the output and could not be had: %v\n"+
			"(it comes from %s@%s through the Go module proxy; or set UNSTICK_SARIF_SCHEMA=/path/to/sarif-schema-2.1.0.json)",
			schemaErr, schemaModule, schemaVersion)
	}
	return schemaVal
}

// ValidateSARIF validates a SARIF document against the official schema.
func ValidateSARIF(t testing.TB, doc []byte) error {
	t.Helper()
	s := SARIFSchema(t)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(inst)
}

func loadSchema() (*jsonschema.Schema, error) {
	var raw []byte
	if p := os.Getenv("UNSTICK_SARIF_SCHEMA"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		raw = b
	} else {
		b, err := fromModule()
		if err != nil {
			return nil, err
		}
		raw = b
	}
	var probe struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("the schema is not JSON: %w", err)
	}
	if probe.ID != SARIFSchemaID {
		return nil, fmt.Errorf("the schema's id is %q, want %q", probe.ID, SARIFSchemaID)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(SARIFSchemaID, doc); err != nil {
		return nil, err
	}
	return c.Compile(SARIFSchemaID)
}

// fromModule downloads the module (a no-op when it is in the module cache already) and
// reads the schema string constant out of its source.
func fromModule() ([]byte, error) {
	tmp, err := os.MkdirTemp("", "unstick-sarif-schema-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte("module schemaprobe\n\ngo 1.26\n"), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("go", "mod", "download", "-json", schemaModule+"@"+schemaVersion)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download %s@%s: %v: %s%s", schemaModule, schemaVersion, err, stderr.String(), out)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("go mod download printed %q: %w", out, err)
	}
	if info.Error != "" || info.Dir == "" {
		return nil, fmt.Errorf("go mod download %s@%s: %s", schemaModule, schemaVersion, info.Error)
	}
	src := filepath.Join(info.Dir, filepath.FromSlash(schemaFile))
	f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
	if err != nil {
		return nil, err
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if n.Name != schemaConst || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return nil, fmt.Errorf("%s: const %s is not a string literal", src, schemaConst)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", src, err)
				}
				return []byte(s), nil
			}
		}
	}
	return nil, fmt.Errorf("%s: no const %s", src, schemaConst)
}
