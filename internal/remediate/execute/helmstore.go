package execute

import (
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// releaseStore reads and writes Helm release records through Helm's Secrets driver with the
// same keys, labels and errors as Helm's pkg/storage, for the five operations the executor
// needs. pkg/storage itself is not linked: it brings Helm's chart utilities and their JSON
// Schema compiler, whose package initialisation every process of unstick paid at start
// (about 2 MB of heap and several milliseconds), in every verb, to serve a helm fix.
type releaseStore struct {
	d *driver.Secrets
}

// releaseKey names the Secret of one revision as Helm's storage does: sh.helm.release.v1.NAME.vN.
func releaseKey(name string, version int) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, version)
}

// Get reads revision version of release name.
func (s releaseStore) Get(name string, version int) (*release.Release, error) {
	return s.d.Get(releaseKey(name, version))
}

// Create writes a new revision (no history limit: unstick never prunes records).
func (s releaseStore) Create(r *release.Release) error {
	return s.d.Create(releaseKey(r.Name, r.Version), r)
}

// Update rewrites an existing revision.
func (s releaseStore) Update(r *release.Release) error {
	return s.d.Update(releaseKey(r.Name, r.Version), r)
}

// DeployedAll returns every revision of name whose status is deployed; none is Helm's
// driver.ErrNoDeployedReleases.
func (s releaseStore) DeployedAll(name string) ([]*release.Release, error) {
	ls, err := s.d.Query(map[string]string{"name": name, "owner": "helm", "status": "deployed"})
	if err != nil && strings.Contains(err.Error(), "not found") {
		return nil, driver.NewErrNoDeployedReleases(name)
	}
	return ls, err
}

// Last returns the highest revision of name.
func (s releaseStore) Last(name string) (*release.Release, error) {
	h, err := s.d.Query(map[string]string{"name": name, "owner": "helm"})
	if err != nil {
		return nil, err
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("no revision for release %q", name)
	}
	last := h[0]
	for _, r := range h[1:] {
		if r.Version > last.Version {
			last = r
		}
	}
	return last, nil
}
