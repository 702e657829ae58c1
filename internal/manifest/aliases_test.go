package manifest

import (
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/yamlbudget/bombtest"
)

// A release manifest is written by anyone who may write Secrets in its namespace. Each alias
// bomb is refused by CheckAliases without being expanded; a manifest whose documents share an
// anchored label set passes, and so does a large one with '&' and '*' but no alias.
func TestCheckAliasesRefusesBombs(t *testing.T) {
	for name, doc := range bombtest.Shapes("tenant-a", "app-config") {
		t.Run(name, func(t *testing.T) {
			text := "---\n# Source: app/templates/sa.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n---\n# Source: app/templates/cm.yaml\n" + doc
			var err error
			bombtest.WithinAlloc(t, "CheckAliases", func() { err = CheckAliases(text) })
			if err == nil || !strings.HasPrefix(err.Error(), "with its YAML aliases expanded it holds ") || !strings.Contains(err.Error(), "nodes allowed") {
				t.Fatalf("want the aliases error, got %v", err)
			}
		})
	}
	shared := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: &l {app: web, tier: front}\nspec:\n  selector:\n    matchLabels: *l\n  template:\n    metadata:\n      labels: *l\n"
	if err := CheckAliases(shared); err != nil {
		t.Errorf("an anchored label set used twice must pass: %v", err)
	}
	big := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rules\ndata:\n  glob: '*.conf'\n  url: https://example.com/?a=1&b=2\n  blob: \"" + strings.Repeat("z", 20<<20) + "\"\n"
	if err := CheckAliases(big); err != nil {
		t.Errorf("a 20 MiB manifest without an alias must pass: %v", err)
	}
}

// A CustomResourceDefinition document is decoded whole to read its versions; one that is an
// alias bomb keeps its identity (from its top-level lines) and no versions, and reading it
// does not expand the aliases.
func TestDocsCRDAliasBomb(t *testing.T) {
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names:\n    plural: widgets\n" +
		"  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: &s {description: \"" + strings.Repeat("W", 1<<20) + "\"}\n" +
		"x-copies: " + bombtest.AliasList("s", 900) + "\n"
	var docs []Doc
	bombtest.WithinAlloc(t, "Docs", func() { docs = Docs(crd, "") })
	if len(docs) != 1 || docs[0].Name != "widgets.example.com" || docs[0].CRD != nil {
		t.Fatalf("want the CRD's identity without its versions, got %+v", docs)
	}
}
