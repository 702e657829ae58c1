package execute

import (
	"fmt"

	"github.com/unstick-dev/unstick/internal/manifest"
)

// manifestFits refuses a revision's manifest whose YAML aliases expand past what
// manifest.CheckAliases allows, naming the revision, before anything decodes it: a release
// Secret is written by anyone who may write Secrets in its namespace.
func manifestFits(ns, name string, rev int, text string) error {
	if err := manifest.CheckAliases(text); err != nil {
		return fmt.Errorf("Helm release %s/%s revision %d: manifest not read: %w", ns, name, rev, err)
	}
	return nil
}

// checkAliases is manifest.CheckAliases for the decoders, whose parameter is named manifest.
func checkAliases(text string) error { return manifest.CheckAliases(text) }
