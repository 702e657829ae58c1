// Package helmrelease decodes Helm v3 release records from their storage Secrets into a small
// typed view. The payload (chart, values, manifest) never leaves this package: only the metadata
// an operator needs to judge a stuck upgrade does.
package helmrelease

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"

	"github.com/unstick-dev/unstick/internal/manifest"
)

// SecretType is the type Helm gives its release storage Secrets.
const SecretType = "helm.sh/release.v1"

// SecretPrefix starts every Helm v3 release Secret name: sh.helm.release.v1.<name>.v<rev>.
const SecretPrefix = "sh.helm.release.v1."

// maxPayload bounds a decompressed release record (Helm's own limit on a Secret is 1 MiB
// compressed; a gzip bomb must not eat the scanner's memory).
const maxPayload = 64 << 20

// payloads bounds how many release payloads are decompressed at once: each may hold up to
// twice maxPayload while it is read, whatever the number of loader workers.
var payloads = make(chan struct{}, 2)

// Release is what unstick knows of one revision of one release.
type Release struct {
	Name          string
	Namespace     string
	Revision      int
	Status        string // deployed, superseded, failed, pending-install, pending-upgrade, pending-rollback, uninstalling, uninstalled, unknown
	Chart         string
	ChartVersion  string
	AppVersion    string
	FirstDeployed time.Time
	LastDeployed  time.Time
	ModifiedAt    time.Time // the storage label modifiedAt (Helm >= 3.13)
	CreatedAt     time.Time // the storage label createdAt, set when the revision's record was written
	Deleted       time.Time // info.deleted: when an uninstall started
	Description   string
	SecretName    string
	// StoredBytes is the size of the storage Secret's data, what the API server's 1 MiB limit
	// counts (the record itself is not kept).
	StoredBytes int
	// Docs are the documents of the revision's manifest, by identity only (apiVersion, kind,
	// namespace, name, template path): which APIs the revision uses. The manifest itself is
	// not kept.
	Docs []manifest.Doc
	// PayloadError is set when the record could not be decoded; the fields above then come
	// from the Secret's labels only.
	PayloadError error
	// Malformed is set when the Secret's name, labels and record disagree on the release's
	// name, namespace or revision. Name, Namespace and Revision are always the Secret's own;
	// a malformed release is reported and never acted on.
	Malformed error
}

// Helm's release statuses (helm pkg/release/status.go).
const (
	StatusUnknown         = "unknown"
	StatusDeployed        = "deployed"
	StatusUninstalled     = "uninstalled"
	StatusSuperseded      = "superseded"
	StatusFailed          = "failed"
	StatusUninstalling    = "uninstalling"
	StatusPendingInstall  = "pending-install"
	StatusPendingUpgrade  = "pending-upgrade"
	StatusPendingRollback = "pending-rollback"
)

// IsPending reports a pending-install, pending-upgrade or pending-rollback revision.
func (r *Release) IsPending() bool { return strings.HasPrefix(r.Status, "pending-") }

// Since is the best time this revision entered its status. Install, upgrade and rollback set
// info.last_deployed when they write the revision; an uninstall keeps it and sets
// info.deleted instead. The storage labels modifiedAt and createdAt stand in when the record
// could not be read.
func (r *Release) Since() time.Time {
	if (r.Status == StatusUninstalling || r.Status == StatusUninstalled) && !r.Deleted.IsZero() {
		return r.Deleted
	}
	for _, t := range []time.Time{r.LastDeployed, r.ModifiedAt, r.CreatedAt} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// FromSecret builds a Release from a Secret's name, namespace, labels and data["release"].
// data is the value as it appears in the Secret object's data map after the API's own base64
// has been removed by the decoder (so Helm's base64(gzip(json))); an extra base64 layer, as
// seen when a YAML dump is read without decoding, is tolerated.
func FromSecret(name, namespace string, labels map[string]string, data []byte) *Release {
	r := fromLabels(name, namespace, labels)
	r.Malformed = storageMismatch(name, labels)
	rel, err := Decode(data)
	if err != nil {
		r.PayloadError = err
		return r
	}
	// The release's name, namespace and revision are the Secret's own (what Helm's storage
	// queries by); a record that says otherwise is malformed, and nothing is done with it.
	if r.Malformed == nil {
		r.Malformed = recordMismatch(r, rel)
	}
	// Anyone who may write Secrets in the namespace writes this manifest: one whose aliases
	// expand past the bound is not read, and the record with it (labels only, never acted on).
	if err := manifest.CheckAliases(rel.Manifest); err != nil {
		r.PayloadError = fmt.Errorf("release manifest not read: %w", err)
		return r
	}
	if rel.Info != nil {
		if rel.Info.Status != "" {
			r.Status = rel.Info.Status.String()
		}
		r.Description = rel.Info.Description
		r.FirstDeployed = rel.Info.FirstDeployed.Time
		r.LastDeployed = rel.Info.LastDeployed.Time
		r.Deleted = rel.Info.Deleted.Time
	}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		r.Chart = rel.Chart.Metadata.Name
		r.ChartVersion = rel.Chart.Metadata.Version
		r.AppVersion = rel.Chart.Metadata.AppVersion
	}
	r.Docs = manifest.Docs(rel.Manifest, "")
	return r
}

// storageMismatch checks a release Secret's name against its labels as Helm's Secrets driver
// writes them: sh.helm.release.v1.<name>.v<version>, labels name, version and owner=helm.
func storageMismatch(secret string, labels map[string]string) error {
	name, rev, ok := parseSecretName(secret)
	switch {
	case !ok:
		return fmt.Errorf("its name is not sh.helm.release.v1.<release>.v<revision>")
	case labels["owner"] != "helm":
		return fmt.Errorf("it is not labelled owner=helm")
	case labels["name"] != name:
		return fmt.Errorf("its label name=%q does not match its name (release %q)", labels["name"], name)
	case labels["version"] != strconv.Itoa(rev):
		return fmt.Errorf("its label version=%q does not match its name (revision %d)", labels["version"], rev)
	}
	return nil
}

// recordMismatch compares the record a Secret holds with the Secret: the same release name,
// namespace (when the record states one) and revision.
func recordMismatch(r *Release, rel *release.Release) error {
	switch {
	case rel.Name != r.Name:
		return fmt.Errorf("the record names release %q, the Secret %q", rel.Name, r.Name)
	case rel.Namespace != "" && rel.Namespace != r.Namespace:
		return fmt.Errorf("the record names namespace %q, the Secret is in %q", rel.Namespace, r.Namespace)
	case rel.Version != r.Revision:
		return fmt.Errorf("the record is revision %d, the Secret's name and label say %d", rel.Version, r.Revision)
	}
	return nil
}

func fromLabels(name, namespace string, labels map[string]string) *Release {
	r := &Release{Name: labels["name"], Namespace: namespace, Status: labels["status"], SecretName: name}
	if v, err := strconv.Atoi(labels["version"]); err == nil {
		r.Revision = v
	}
	// The Secret's name, sh.helm.release.v1.<name>.v<rev>, is what Helm reads a revision by.
	if relName, rev, ok := parseSecretName(name); ok {
		r.Name, r.Revision = relName, rev
	}
	if s, err := strconv.ParseInt(labels["modifiedAt"], 10, 64); err == nil {
		r.ModifiedAt = time.Unix(s, 0).UTC()
	}
	if s, err := strconv.ParseInt(labels["createdAt"], 10, 64); err == nil {
		r.CreatedAt = time.Unix(s, 0).UTC()
	}
	return r
}

// parseSecretName splits sh.helm.release.v1.<name>.v<rev>; a name without the prefix or a
// numeric revision is not a release Secret's name.
func parseSecretName(secret string) (name string, rev int, ok bool) {
	rest, ok := strings.CutPrefix(secret, SecretPrefix)
	i := strings.LastIndex(rest, ".v")
	if !ok || i <= 0 {
		return "", 0, false
	}
	rev, err := strconv.Atoi(rest[i+len(".v"):])
	if err != nil || rev <= 0 {
		return "", 0, false
	}
	return rest[:i], rev, true
}

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// Decode turns Helm's stored form back into a release record: base64 → gzip → JSON, with one
// more base64 layer tolerated, and uncompressed JSON accepted (Helm only gzips when it can).
func Decode(data []byte) (*release.Release, error) {
	var rec storedRecord
	err := withPayload(data, func(b []byte) error {
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("release payload: JSON: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rec.Name == "" && rec.Version == 0 && rec.Info == nil {
		return nil, fmt.Errorf("release payload holds no release record")
	}
	return rec.release(), nil
}

// withPayload undoes Helm's stored form (base64 → gzip, as Decode describes) and hands the
// record's JSON to use; a decompressed payload is held, within the bound on payloads
// decompressed at once, only while use runs.
func withPayload(data []byte, use func([]byte) error) error {
	b := bytes.TrimSpace(data)
	if len(b) == 0 {
		return fmt.Errorf("empty release payload")
	}
	for layer := 0; layer < 3 && !bytes.HasPrefix(b, gzipMagic) && !looksJSON(b); layer++ {
		// Helm writes one unbroken line; a value that went through base64(1) or an editor may
		// be wrapped.
		d, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(b)), ""))
		if err != nil {
			return fmt.Errorf("release payload is not base64 (layer %d): %w", layer+1, err)
		}
		b = bytes.TrimSpace(d)
	}
	if !bytes.HasPrefix(b, gzipMagic) {
		return use(b)
	}
	payloads <- struct{}{}
	defer func() { <-payloads }()
	d, err := gunzip(b)
	if err != nil {
		return err
	}
	return use(d)
}

// gunzip decompresses a release payload within maxPayload.
func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("release payload: gzip: %w", err)
	}
	// gzip's trailer states the decompressed size: read into a buffer of that size (within
	// the limit) rather than let it double its way up to twice the payload.
	var buf bytes.Buffer
	if n := len(b); n >= 4 {
		if size := binary.LittleEndian.Uint32(b[n-4:]); size <= maxPayload {
			buf.Grow(int(size) + bytes.MinRead)
		}
	}
	_, err = buf.ReadFrom(io.LimitReader(zr, maxPayload+1))
	if err != nil {
		return nil, fmt.Errorf("release payload: gzip: %w", err)
	}
	if buf.Len() > maxPayload {
		return nil, fmt.Errorf("release payload larger than %d MiB decompressed", maxPayload>>20)
	}
	return buf.Bytes(), nil
}

// storedRecord is the part of Helm's stored release that unstick reads: name, revision, status,
// times, description, the chart's metadata and the manifest (read for its documents'
// identities, then dropped by FromSecret). Decoding only these skips the values, the config
// and the chart's templates without building them in memory (a release
// whose config holds millions of empty objects decodes in the time it takes to scan it).
type storedRecord struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   int    `json:"version"`
	Manifest  string `json:"manifest"`
	Info      *struct {
		FirstDeployed helmtime.Time  `json:"first_deployed"`
		LastDeployed  helmtime.Time  `json:"last_deployed"`
		Deleted       helmtime.Time  `json:"deleted"`
		Description   string         `json:"description"`
		Status        release.Status `json:"status"`
	} `json:"info"`
	Chart *struct {
		Metadata *struct {
			Name       string `json:"name"`
			Version    string `json:"version"`
			AppVersion string `json:"appVersion"`
			APIVersion string `json:"apiVersion"`
		} `json:"metadata"`
	} `json:"chart"`
}

func (r *storedRecord) release() *release.Release {
	out := &release.Release{Name: r.Name, Namespace: r.Namespace, Version: r.Version, Manifest: r.Manifest}
	if r.Info != nil {
		out.Info = &release.Info{FirstDeployed: r.Info.FirstDeployed, LastDeployed: r.Info.LastDeployed, Deleted: r.Info.Deleted,
			Description: r.Info.Description, Status: r.Info.Status}
	}
	if r.Chart != nil && r.Chart.Metadata != nil {
		m := r.Chart.Metadata
		out.Chart = &chart.Chart{Metadata: &chart.Metadata{Name: m.Name, Version: m.Version, AppVersion: m.AppVersion, APIVersion: m.APIVersion}}
	}
	return out
}

func looksJSON(b []byte) bool { return len(b) > 0 && b[0] == '{' }
