package execute

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/removedapi"
)

// The release manifest rewrite (what helm-mapkubeapis does, done as every other step is):
// the release records are read and written with Helm's own storage (pkg/storage,
// driver.Secrets) through the guarded SecretInterface of helm.go, so the record is encoded
// exactly as Helm encodes it and every update carries the resourceVersion read when planning.
// Only the apiVersion line of a document changes; a document whose API has no replacement, or
// whose replacement changes the schema (removedapi's Review), refuses the whole step before
// any write.

// docChange is one manifest document whose apiVersion the rewrite replaces.
type docChange struct {
	Kind, Name, Namespace string
	From, To              string
	// Obj is the rewritten document.
	Obj map[string]any
}

func (d docChange) String() string {
	return fmt.Sprintf("%s %s: %s -> %s", d.Kind, d.Name, d.From, d.To)
}

var docSeparator = lazyre.New(`^---(\s.*)?$`)

// rewriteManifest replaces, document by document, every apiVersion that Kubernetes 1.minor
// does not serve with its replacement. It returns the new manifest, the documents changed,
// and why the rewrite must be refused (a removed API with no replacement, or one marked for
// review), if any is.
func rewriteManifest(manifest string, minor int) (string, []docChange, []string, error) {
	if err := checkAliases(manifest); err != nil {
		return "", nil, nil, fmt.Errorf("manifest not read: %w", err)
	}
	lines := strings.SplitAfter(manifest, "\n")
	var out strings.Builder
	var changes []docChange
	var refusals []string
	var doc []string
	flush := func() error {
		defer func() { doc = nil }()
		text := strings.Join(doc, "")
		var m map[string]any
		if err := yaml.Unmarshal([]byte(text), &m); err != nil {
			return fmt.Errorf("a manifest document cannot be parsed: %w", err)
		}
		av, _ := m["apiVersion"].(string)
		kind, _ := m["kind"].(string)
		rm, ok := removedapi.Lookup(av, kind)
		if m == nil || !ok || !rm.RemovedAt(minor) {
			out.WriteString(text)
			return nil
		}
		u := unstructured.Unstructured{Object: m}
		ref := kind + " " + u.GetName()
		to := rm.ReplacementAPIVersion()
		switch {
		case to == "":
			refusals = append(refusals, fmt.Sprintf("%s uses %s, removed in Kubernetes %s with no replacement API", ref, av, rm.RemovedIn))
			out.WriteString(text)
			return nil
		case rm.NeedsReview(m):
			refusals = append(refusals, fmt.Sprintf("%s uses %s; its replacement %s needs a manual review: %s", ref, av, to, rm.Review))
			out.WriteString(text)
			return nil
		}
		// Exactly one top-level apiVersion line, and after the change the document must be
		// the same object but for its apiVersion.
		line := regexp.MustCompile(`(?m)^apiVersion:[ \t]*["']?` + regexp.QuoteMeta(av) + `["']?[ \t]*(#.*)?(\r?\n|$)`)
		locs := line.FindAllStringIndex(text, -1)
		if len(locs) != 1 {
			return fmt.Errorf("%s: found %d top-level \"apiVersion: %s\" lines, want exactly one (a manifest written as JSON or flow YAML is not rewritten)", ref, len(locs), av)
		}
		nl := "\n"
		if !strings.HasSuffix(text[locs[0][0]:locs[0][1]], "\n") {
			nl = ""
		}
		newText := text[:locs[0][0]] + "apiVersion: " + to + nl + text[locs[0][1]:]
		var after map[string]any
		if err := yaml.Unmarshal([]byte(newText), &after); err != nil {
			return fmt.Errorf("%s: the rewritten document cannot be parsed: %w", ref, err)
		}
		want := u.DeepCopy().Object
		want["apiVersion"] = to
		if !reflect.DeepEqual(after, want) {
			return fmt.Errorf("%s: rewriting the apiVersion line changed more than the apiVersion", ref)
		}
		changes = append(changes, docChange{Kind: kind, Name: u.GetName(), Namespace: u.GetNamespace(), From: av, To: to, Obj: after})
		out.WriteString(newText)
		return nil
	}
	for _, l := range lines {
		if docSeparator().MatchString(strings.TrimRight(l, "\r\n")) {
			if len(doc) > 0 {
				if err := flush(); err != nil {
					return "", nil, nil, err
				}
			}
			out.WriteString(l)
			continue
		}
		doc = append(doc, l)
	}
	if len(doc) > 0 {
		if err := flush(); err != nil {
			return "", nil, nil, err
		}
	}
	return out.String(), changes, refusals, nil
}

// removedIn lists the documents of a manifest that Kubernetes 1.minor does not serve.
func removedIn(manifest string, minor int) ([]string, error) {
	_, changes, refusals, err := rewriteManifest(manifest, minor)
	if err != nil {
		return nil, err
	}
	out := refusals
	for _, c := range changes {
		out = append(out, c.Kind+" "+c.Name+" "+c.From)
	}
	return out, nil
}

// kubeMinor is the minor of the Kubernetes version a rewrite is judged against: the step's
// (an upgrade's target), else the API server's own.
func (e *Executor) kubeMinor(cl *cluster, rw *remediate.APIRewrite) (int, string, error) {
	v := rw.KubernetesVersion
	if v == "" {
		info, err := cl.kube.Discovery.ServerVersion()
		if err != nil {
			return 0, "", fmt.Errorf("reading the API server's version: %w", err)
		}
		v = info.GitVersion
	}
	_, minor, ok := removedapi.ParseVersion(v)
	if !ok {
		return 0, "", fmt.Errorf("cannot read the Kubernetes version %q", v)
	}
	return minor, v, nil
}

// helmRewrite rewrites the manifests of the step's revisions (dry: validates every rewritten
// document and the record's update on the server, writing nothing).
func (e *Executor) helmRewrite(ctx context.Context, cl *cluster, st remediate.Step, dry bool) ([]Write, error) {
	rw := st.Rewrite
	if rw == nil || len(rw.Revisions) == 0 {
		return nil, fmt.Errorf("step %s names no release revision to rewrite", st.ID)
	}
	minor, version, err := e.kubeMinor(cl, rw)
	if err != nil {
		return nil, err
	}
	expect := plannedVersions(st)
	if err := e.holdSecretsIn(ctx, cl, st, rw.Namespace, expect); err != nil {
		return nil, err
	}
	store, gs := e.storageIn(cl, st, rw.Namespace, dry, expect)
	last, err := store.Last(rw.Release)
	if err != nil {
		return nil, e.helmErr(st, gs, remediate.HelmSecretPrefix+rw.Release, err)
	}
	if last.Version != rw.Revisions[0] {
		return nil, &ConflictError{Step: st.ID, Object: gs.object(secretName(rw.Release, last.Version)), Reason: fmt.Sprintf("revision %d is the newest now, not %d", last.Version, rw.Revisions[0])}
	}
	type pending struct {
		rel     *release.Release
		changes []docChange
	}
	var todo []pending
	for _, rev := range rw.Revisions {
		rel, err := store.Get(rw.Release, rev)
		if err != nil {
			return nil, e.helmErr(st, gs, secretName(rw.Release, rev), err)
		}
		if rel.Name != rw.Release || rel.Version != rev || (rel.Namespace != "" && rel.Namespace != rw.Namespace) {
			return nil, &RecordError{Object: gs.object(secretName(rw.Release, rev)), Reason: fmt.Sprintf("the record it holds names release %q in namespace %q at revision %d", rel.Name, rel.Namespace, rel.Version)}
		}
		if err := manifestFits(rw.Namespace, rw.Release, rev, rel.Manifest); err != nil {
			return nil, err
		}
		manifest, changes, refusals, err := rewriteManifest(rel.Manifest, minor)
		if err != nil {
			return nil, fmt.Errorf("revision %d of Helm release %s/%s: %w", rev, rw.Namespace, rw.Release, err)
		}
		if len(refusals) > 0 {
			return nil, fmt.Errorf("refusing to rewrite revision %d of Helm release %s/%s: %s", rev, rw.Namespace, rw.Release, strings.Join(refusals, "; "))
		}
		if len(changes) == 0 {
			continue
		}
		rel.Manifest = manifest
		todo = append(todo, pending{rel, changes})
	}
	var changed []docChange
	for _, p := range todo {
		changed = append(changed, p.changes...)
	}
	if err := e.gateRewrite(ctx, cl, st, changed); err != nil {
		return nil, err
	}
	if dry {
		// Every rewritten document must be accepted by the server (server-side apply,
		// dryRun=All: a create where it does not exist, an update where it does).
		for _, p := range todo {
			for _, c := range p.changes {
				if err := e.dryRunDoc(ctx, cl, rw.Namespace, c); err != nil {
					return nil, fmt.Errorf("revision %d, %s: the server refuses the rewritten document (dry-run): %w", p.rel.Version, c, err)
				}
			}
		}
		var parts []string
		for _, p := range todo {
			parts = append(parts, fmt.Sprintf("revision %d: %s", p.rel.Version, describeDocs(p.changes)))
		}
		if len(parts) == 0 {
			parts = append(parts, describeDocs(nil))
		}
		e.say("  [%d] dry-run of the rewrite against Kubernetes %s passed: %s", e.numbers[st.ID], version, strings.Join(parts, "; "))
	}
	for _, p := range todo {
		if err := store.Update(p.rel); err != nil {
			return gs.writes, e.helmErr(st, gs, secretName(rw.Release, p.rel.Version), err)
		}
	}
	return gs.writes, nil
}

func describeDocs(changes []docChange) string {
	var parts []string
	for _, c := range changes {
		parts = append(parts, c.String())
	}
	if len(parts) == 0 {
		return "no document uses a removed API: nothing to rewrite"
	}
	return strings.Join(parts, ", ")
}

// dryRunDoc has the server validate one rewritten document.
func (e *Executor) dryRunDoc(ctx context.Context, cl *cluster, releaseNS string, c docChange) error {
	u := &unstructured.Unstructured{Object: c.Obj}
	_, namespaced, err := cl.resource(u.GetAPIVersion(), u.GetKind())
	if err != nil {
		return err
	}
	if namespaced && u.GetNamespace() == "" {
		u.SetNamespace(releaseNS)
	}
	if !namespaced {
		u.SetNamespace("")
	}
	o := remediate.Object{Cluster: cl.name, APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
	h, err := cl.handle(o)
	if err != nil {
		return err
	}
	_, err = h.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
	return err
}

// rewriteState reads the revisions back with Helm's storage: each must decode, and its
// manifest must hold no API the Kubernetes version does not serve.
func (e *Executor) rewriteState(cl *cluster, st remediate.Step) (bool, bool, string, error) {
	rw := st.Rewrite
	minor, version, err := e.kubeMinor(cl, rw)
	if err != nil {
		return false, false, "", err
	}
	store, _ := e.storageIn(cl, st, rw.Namespace, true, map[string]string{})
	for _, rev := range rw.Revisions {
		rel, err := store.Get(rw.Release, rev)
		if err != nil {
			return false, false, "", fmt.Errorf("Helm's storage cannot read revision %d of %s/%s: %w", rev, rw.Namespace, rw.Release, err)
		}
		if err := manifestFits(rw.Namespace, rw.Release, rev, rel.Manifest); err != nil {
			return false, false, "", err
		}
		left, err := removedIn(rel.Manifest, minor)
		if err != nil {
			return false, false, "", err
		}
		if len(left) > 0 {
			return false, false, fmt.Sprintf("revision %d still uses APIs Kubernetes %s does not serve: %s", rev, version, strings.Join(left, ", ")), nil
		}
	}
	return true, true, "", nil
}

func secretName(release string, rev int) string {
	return fmt.Sprintf("%s%s.v%d", remediate.HelmSecretPrefix, release, rev)
}
