package helmrelease

import (
	"fmt"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/yamlbudget/bombtest"
)

// A tenant who may write Secrets in tenant-a writes a release whose manifest is an alias bomb:
// the record is not read (labels only, the reason naming the manifest), and reading it
// allocates a few MiB, not the gigabytes the expanded manifest holds.
func TestFromSecretAliasBombManifest(t *testing.T) {
	for name, doc := range bombtest.Shapes("tenant-a", "app-config") {
		t.Run(name, func(t *testing.T) {
			rec := fmt.Sprintf(`{"name":"app","namespace":"tenant-a","version":3,"info":{"status":"deployed","description":"Upgrade complete"},"manifest":%s}`, strconvQuote(doc))
			data := b64(gzipped(t, []byte(rec)))
			labels := map[string]string{"name": "app", "owner": "helm", "status": "pending-upgrade", "version": "3"}
			var r *Release
			bombtest.WithinAlloc(t, "FromSecret", func() { r = FromSecret("sh.helm.release.v1.app.v3", "tenant-a", labels, data) })
			if r.PayloadError == nil || !strings.HasPrefix(r.PayloadError.Error(), "release manifest not read: with its YAML aliases expanded it holds ") {
				t.Fatalf("want the manifest refused, got %v", r.PayloadError)
			}
			if r.Malformed != nil || r.Name != "app" || r.Revision != 3 || r.Status != "pending-upgrade" || r.Docs != nil || r.Description != "" {
				t.Errorf("want the release from its labels alone, got %+v", *r)
			}
		})
	}
}
