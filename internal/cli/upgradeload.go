package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/spf13/pflag"

	"github.com/unstick-dev/unstick/internal/config"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/inventory"
	"github.com/unstick-dev/unstick/internal/registry"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// registryFlags control how images are checked against their registries.
type registryFlags struct {
	offline     bool
	insecure    []string
	timeout     time.Duration
	concurrency int
}

func (r *registryFlags) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&r.offline, "offline-registry", false, "never contact an image registry: judge images by events and logs only")
	fs.StringArrayVar(&r.insecure, "insecure-registry", nil, "registry HOST[:PORT] to reach over plain HTTP (repeatable; loopback hosts fall back to HTTP on their own)")
	fs.DurationVar(&r.timeout, "registry-timeout", 10*time.Second, "give up on one registry request after this long (429 and 5xx answers are retried with backoff)")
	fs.IntVar(&r.concurrency, "registry-concurrency", registry.DefaultConcurrency, "image references checked at once")
}

func (r *registryFlags) validate() error {
	for _, h := range r.insecure {
		if h == "" || strings.ContainsAny(h, "/ ") || strings.Contains(h, "://") {
			return usageErrorf("--insecure-registry %q: want a registry host such as registry.local:5000 (no scheme, no path)", h)
		}
	}
	if r.concurrency < 1 {
		return usageErrorf("--registry-concurrency must be at least 1")
	}
	if r.timeout <= 0 {
		return usageErrorf("--registry-timeout must be positive")
	}
	return nil
}

// upgradeInputs is what the upgrade verbs judge: the snapshot, the images upgrades depend on
// and — unless the registry is off — what the registries said about them, gathered before any
// check runs so the checks stay pure.
type upgradeInputs struct {
	snap  *snapshot.Snapshot
	uses  []inventory.Use
	facts map[string]imageref.Facts // nil when the registry was not asked
	// registryErrors are problems reading pull secrets (live) for the registry checks.
	registryErrors []finding.ScanError
	stats          registry.Stats
	took           time.Duration
}

// upgradeLoader loads an offline bundle or live clusters and probes the images they use.
type upgradeLoader struct {
	g      *globalOptions
	from   string
	live   bool
	kube   *kubeFlags
	reg    *registryFlags
	cfg    *config.Config
	target string
	quiet  bool
	// noBundleProbe leaves the registries unasked for an offline bundle (scan without
	// --registry).
	noBundleProbe bool
	// newProber builds the prober (tests inject one whose transport they watch).
	newProber func(registry.Options) *registry.Prober
}

// inputName names what was read, for messages: the bundle path or the contexts.
func (l *upgradeLoader) inputName() string {
	if !l.live {
		return l.from
	}
	switch {
	case l.kube.allContexts:
		return "every context of the kubeconfig"
	case len(l.kube.contexts) > 0:
		return "context " + strings.Join(l.kube.contexts, ", ")
	}
	return "the current context"
}

func (l *upgradeLoader) offline() bool { return l.offlineReason() != "" }

// offlineReason says why no registry is asked, as the user would check it, or "" when
// registries are asked.
func (l *upgradeLoader) offlineReason() string {
	switch {
	case l.reg.offline:
		return "--offline-registry was given"
	case l.cfg != nil && l.cfg.Registry.Offline:
		return "registry.offline is true in " + l.cfg.Path
	case l.noBundleProbe && !l.live:
		return "an offline bundle is judged without asking registries unless --registry is given"
	}
	return ""
}

func (l *upgradeLoader) load(ctx context.Context) (*upgradeInputs, error) {
	prog := l.g.status
	prog.quiet(l.quiet)
	defer prog.done()
	var snap *snapshot.Snapshot
	var live *source.Live
	var err error
	if !l.live {
		src := &source.Offline{Path: l.from, Progress: func(n int) { prog.count("reading "+l.from, n, 0, "files") }}
		if snap, err = src.Load(ctx); err != nil {
			return nil, err
		}
		// With -v, every document the loader left out is named, as the report lists them.
		for _, sk := range snap.Skipped {
			l.g.log.Info("skipped", "file", sk.File, "line", sk.Line, "reason", sk.Reason)
		}
	} else {
		if live, err = l.kube.live(ctx, func(done, total int) { prog.count("reading clusters", done, total, "clusters") }); err != nil {
			return nil, err
		}
		if snap, err = live.Load(ctx); err != nil {
			return nil, err
		}
	}
	in := &upgradeInputs{snap: snap, uses: inventory.CollectFor(snap, l.target)}
	l.probe(ctx, in, live)
	return in, nil
}

// probe asks the registries about in.uses (unless the registry is off) and records the facts
// in in.facts: the load step every verb that judges images shares (scan can call it after
// reading its snapshot). live, when not nil, supplies the workloads' pull secrets.
func (l *upgradeLoader) probe(ctx context.Context, in *upgradeInputs, live *source.Live) {
	prog := l.g.status
	if why := l.offlineReason(); why != "" {
		l.g.log.Info("registry checks are off (" + why + "): images are judged by events and logs only")
		return
	}
	opts := registry.Options{Timeout: l.reg.timeout, Concurrency: l.reg.concurrency, UserAgent: "unstick/" + versionString()}
	opts.Insecure = append(opts.Insecure, l.reg.insecure...)
	if l.cfg != nil {
		opts.Insecure = append(opts.Insecure, l.cfg.Registry.Insecure...)
	}
	if live != nil {
		// Live, the registry is asked with the pull secrets the workloads would use; their
		// payloads stay in memory for this run only.
		var refs []source.SecretRef
		for _, u := range in.uses {
			for _, s := range u.PullSecrets {
				refs = append(refs, source.SecretRef{Cluster: u.Cluster, Namespace: u.Namespace, Name: s})
			}
		}
		if len(refs) > 0 {
			payloads, errs := live.PullSecrets(ctx, refs)
			in.registryErrors = append(in.registryErrors, errs...)
			kc, err := registry.NewPullSecretKeychain(payloads...)
			if err != nil {
				in.registryErrors = append(in.registryErrors, finding.ScanError{Message: "image pull secrets: " + err.Error()})
			}
			opts.Keychains = []authn.Keychain{kc}
		}
	}
	newProber := l.newProber
	if newProber == nil {
		newProber = registry.New
	}
	p := newProber(opts)
	start := time.Now()
	refs := inventory.Refs(in.uses)
	in.facts = p.Probe(ctx, refs, func(done, total int) { prog.count("checking images", done, total, "images") })
	in.took = time.Since(start)
	in.stats = p.Stats()
	l.g.log.Info("checked images", "references", len(refs), "probes", in.stats.Probes, "took", in.took)
}

// validateFrom checks --from against the live flags, as scan does.
func validateFrom(from string, live bool) error {
	if from != "" && live {
		return usageErrorf("--from reads an offline bundle; it cannot be combined with the flags that reach a live cluster (--context, --all-contexts, --kubeconfig, --as, --server, --request-timeout, ...)")
	}
	if from != "" {
		if _, err := os.Stat(from); err != nil {
			return usageErrorf("--from %s: %v", from, unwrapPathError(err))
		}
	}
	return nil
}

// imageRow is one reference of the inventory with what the registry said and where it is used.
type imageRow struct {
	Ref       string              `json:"ref"`
	Canonical string              `json:"canonical"`
	Status    string              `json:"status"`
	Digest    string              `json:"digest,omitempty"`
	MediaType string              `json:"mediaType,omitempty"`
	Index     bool                `json:"index"`
	Platforms []imageref.Platform `json:"platforms"`
	// Lacking are the platforms of nodes that would run the image but have no build.
	Lacking []string        `json:"lackingPlatforms"`
	Pinned  bool            `json:"pinned"`
	Error   string          `json:"error,omitempty"`
	Uses    []inventory.Use `json:"uses"`
}

// Unchecked is the status of references whose registry was not asked (--offline-registry).
const Unchecked = "unchecked"

func imageRows(in *upgradeInputs) []imageRow {
	byRef := map[string]*imageRow{}
	var order []string
	for _, u := range in.uses {
		row := byRef[u.Ref]
		if row == nil {
			row = &imageRow{Ref: u.Ref, Status: Unchecked, Platforms: []imageref.Platform{}, Lacking: []string{}}
			if r, err := imageref.Parse(u.Ref); err == nil {
				row.Canonical = r.String()
				row.Pinned = !r.Floating()
			} else {
				row.Status, row.Error = string(imageref.Invalid), err.Error()
			}
			if f, ok := in.facts[u.Ref]; ok {
				row.Status, row.Digest, row.MediaType, row.Index, row.Error = string(f.Status), f.Digest, f.MediaType, f.Index, f.Error
				if f.Canonical != "" {
					row.Canonical = f.Canonical
				}
				if f.Platforms != nil {
					row.Platforms = f.Platforms
				}
			}
			byRef[u.Ref] = row
			order = append(order, u.Ref)
		}
		row.Uses = append(row.Uses, u)
		if f, ok := in.facts[u.Ref]; ok {
			var lacking []string
			supported := false
			for _, n := range u.Nodes {
				ok, known := f.Supports(n.OS, n.Arch)
				if known && !ok {
					lacking = addOnce(lacking, orDashCLI(n.OS)+"/"+orDashCLI(n.Arch))
				}
				supported = supported || ok
			}
			// A Deployment needs one eligible node it can run on; a Plan needs every node.
			if !u.AnyNode || !supported {
				for _, l := range lacking {
					row.Lacking = addOnce(row.Lacking, l)
				}
			}
		}
	}
	out := make([]imageRow, 0, len(order))
	for _, r := range order {
		out = append(out, *byRef[r])
	}
	return out
}

func orDashCLI(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// usedBy summarises where a reference is used: "Plan system-upgrade/k3s-agent (upgrade) @prod-eu-1".
func (r imageRow) usedBy() []string {
	var out []string
	for _, u := range r.Uses {
		out = addOnce(out, fmt.Sprintf("%s %s/%s (%s) @%s", u.Kind, u.Namespace, u.Name, u.Where, u.Cluster))
	}
	return out
}

// problem says what is wrong with a row for an upgrade, or "".
func (r imageRow) problem() string {
	switch imageref.Status(r.Status) {
	case imageref.Missing:
		return "does not exist in the registry"
	case imageref.Invalid:
		return "is not a valid image reference"
	case imageref.Unauthorized:
		return "could not be verified: the registry refused the credentials available"
	case imageref.Unreachable:
		return "could not be verified: registry unreachable (" + r.Error + ")"
	}
	if len(r.Lacking) > 0 {
		return "has no build for " + strings.Join(r.Lacking, ", ")
	}
	return ""
}

// checked says a registry answered for the reference (or it is not a valid reference, which
// needs no registry to judge): not unreachable, refused or left unasked.
func (r imageRow) checked() bool {
	switch imageref.Status(r.Status) {
	case imageref.Unauthorized, imageref.Unreachable, Unchecked:
		return false
	}
	return true
}

// blocking reports a row that stops an upgrade (as opposed to one that could not be verified).
func (r imageRow) blocking() bool {
	s := imageref.Status(r.Status)
	return s == imageref.Missing || s == imageref.Invalid || len(r.Lacking) > 0
}

func addOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
