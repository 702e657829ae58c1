package check

import (
	"fmt"
	"strings"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// nearLimit is how close to a limit an object may grow before it is reported: within 10 %.
const nearLimit = 0.9

// fleetObjectSize reports Fleet objects that cannot be stored: a Bundle whose resources or
// status (one entry per targeted cluster) approach etcd's 1.5 MiB request limit, a Content as
// large, or the refusal itself quoted by the gitjob (`etcdserver: request is too large`,
// `Request entity too large: limit is 3145728`, `trying to send message larger than max`), the
// fleet-controller or an agent (rancher/fleet#205, #691, #1650, #2388, #3482). The commit then
// never becomes a Bundle, or the Bundle's status stops moving, while everything downstream
// stays Ready at the old revision.
var fleetObjectSize = Check{
	Name:  "fleet/object-size",
	Emits: []string{"fleet/object-too-large"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, m := range ctx.Snap.Management() {
			seen := map[string]bool{}
			for _, f := range quotedTooLarge(ctx, m) {
				seen[f.Object.String()] = true
				out = append(out, f)
			}
			for _, f := range heavyBundles(ctx, m) {
				if !seen[f.Object.String()] {
					out = append(out, f)
				}
			}
			out = append(out, heavyContents(ctx, m)...)
		}
		return out, nil
	},
}

// heavyBundles are the Bundles whose resources or status weigh within 10 % of etcd's limit.
func heavyBundles(ctx *Context, m *snapshot.Cluster) []finding.Finding {
	var out []finding.Finding
	for _, b := range m.Bundles {
		size, ok := m.BundleSizes[b.Namespace+"/"+b.Name]
		if !ok || float64(size.Bytes) < nearLimit*messages.EtcdRequestBytes {
			continue
		}
		what := fmt.Sprintf("Bundle %s/%s weighs %s (resources %s, status %s)", b.Namespace, b.Name, mib(size.Bytes), mib(size.Bytes-size.StatusBytes), mib(size.StatusBytes))
		f := tooLargeFinding(ctx, m, b, bundleObjRef(b), what, messages.TooLarge{Limit: messages.LimitEtcdRequest, LimitBytes: messages.EtcdRequestBytes, SizeBytes: size.Bytes})
		f.Evidence = append([]finding.Evidence{ev(sourceOf(m, bundleObjRef(b)), "spec.resources: %s in %d largest named; status: %s", mib(size.Bytes-size.StatusBytes), len(size.Resources), mib(size.StatusBytes))}, f.Evidence...)
		out = append(out, f)
	}
	return out
}

// heavyContents are the Contents (a Bundle's manifest, gzipped) within 10 % of etcd's limit,
// when the source held their payload (a fleet dump does).
func heavyContents(ctx *Context, m *snapshot.Cluster) []finding.Finding {
	var out []finding.Finding
	for _, name := range m.Contents {
		n := m.ContentBytes[name]
		if float64(n) < nearLimit*messages.EtcdRequestBytes {
			continue
		}
		obj := ref("fleet.cattle.io/v1alpha1", "Content", "", name)
		tl := messages.TooLarge{Limit: messages.LimitEtcdRequest, LimitBytes: messages.EtcdRequestBytes, SizeBytes: n}
		f := ctx.New("fleet/object-too-large", m, obj, fmt.Sprintf("Content %s weighs %s, %s", name, mib(n), limitText(tl)))
		f.Severity = sizeSeverity(tl)
		f.Evidence = []finding.Evidence{ev(sourceOf(m, obj), "Content %s: %d bytes (limit %d)", name, n, tl.LimitBytes)}
		f.Signature = "object-too-large|content"
		out = append(out, f)
	}
	return out
}

// tooLargeFinding is the finding about Bundle b (nil when the refused object is not known),
// reported on obj: the limit met, the largest resources by name, and the ladder filled in.
func tooLargeFinding(ctx *Context, m *snapshot.Cluster, b *fleetv1.Bundle, obj finding.ObjectRef, what string, tl messages.TooLarge) finding.Finding {
	f := ctx.New("fleet/object-too-large", m, obj, what+", "+limitText(tl))
	f.Severity = sizeSeverity(tl)
	f.Signature = "object-too-large|" + tl.Limit
	f.Vars = map[string]string{}
	if b == nil {
		return f
	}
	f.Keys = []string{BundleObjectKey(m.Name, b.Namespace, b.Name)}
	if repo := b.Labels[fleet.LabelRepoName]; repo != "" {
		f.Keys = append(f.Keys, GitRepoKey(m.Name, b.Namespace, repo))
		setGitRepoVars(&f, m, b.Namespace, repo)
	}
	f.Vars["bundle"], f.Vars["fleet-namespace"] = b.Name, b.Namespace
	size := m.BundleSizes[b.Namespace+"/"+b.Name]
	if largest := largestResources(size, 3); largest != "" {
		f.Summary += "; largest resources: " + largest
		f.Vars["paths"] = resourceDirs(size, 3)
		f.Evidence = append(f.Evidence, ev(sourceOf(m, bundleObjRef(b)), "largest resources of Bundle %s: %s", b.Name, largest))
	}
	return f
}

// sizeSeverity is an error once the limit is met (or a refusal was quoted), a warning while
// the object is only near it.
func sizeSeverity(tl messages.TooLarge) finding.Severity {
	if tl.SizeBytes > 0 && tl.SizeBytes < tl.LimitBytes {
		return finding.Warning
	}
	return finding.Error
}

// limitText names the limit and how the object stands to it.
func limitText(tl messages.TooLarge) string {
	name := map[string]string{
		messages.LimitEtcdRequest: "etcd's request limit",
		messages.LimitAPIRequest:  "the API server's request limit",
		messages.LimitGRPCMessage: "the gRPC message limit",
		messages.LimitObjectData:  "the API's limit on a Secret's or ConfigMap's data",
	}[tl.Limit]
	switch {
	case tl.SizeBytes == 0:
		return fmt.Sprintf("refused: over %s of %s", name, mib(tl.LimitBytes))
	case tl.SizeBytes >= tl.LimitBytes:
		return fmt.Sprintf("over %s of %s", name, mib(tl.LimitBytes))
	}
	return fmt.Sprintf("within 10 %% of %s of %s", name, mib(tl.LimitBytes))
}

// largestResources names a Bundle's n largest resources with their sizes.
func largestResources(s snapshot.ObjectSize, n int) string {
	var parts []string
	for i, r := range s.Resources {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", r.Name, mib(r.Bytes)))
	}
	return strings.Join(parts, ", ")
}

// resourceDirs are the directories of the n largest resources: the paths to split out or to
// list in .fleetignore.
func resourceDirs(s snapshot.ObjectSize, n int) string {
	var dirs []string
	for i, r := range s.Resources {
		if i == n {
			break
		}
		d := r.Name
		if k := strings.LastIndex(d, "/"); k > 0 {
			d = d[:k]
		}
		if !containsString(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, " ")
}

func containsString(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// mib renders a size in MiB with two decimals (KiB under 0.1 MiB).
func mib(n int) string {
	if n < 100*1024 {
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.2f MiB", float64(n)/(1024*1024))
}

// eventText is an event's message, when it is a warning.
func warningText(e *corev1.Event) string {
	if e.Type != corev1.EventTypeWarning {
		return ""
	}
	return e.Message
}

// setGitRepoVars fills the GitRepo's name and, when it was read, the force-sync generation
// the ladder's resync sets.
func setGitRepoVars(f *finding.Finding, m *snapshot.Cluster, ns, name string) {
	f.Vars["gitrepo"], f.Vars["fleet-namespace"] = name, ns
	for _, g := range m.GitRepos {
		if g.Namespace == ns && g.Name == name {
			f.Vars["n+1@gitrepos.fleet.cattle.io"] = fmt.Sprint(g.Spec.ForceSyncGeneration + 1)
		}
	}
}
