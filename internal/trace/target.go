package trace

import (
	"fmt"
	"sort"
	"strings"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Target kinds.
const (
	KindGitRepo = "gitrepo"
	KindBundle  = "bundle"
	KindCommit  = "commit"
)

// Target is what the user asked to follow: a GitRepo, a Bundle or a commit, as typed.
type Target struct {
	// Kind is gitrepo, bundle, commit, or "" for a bare NAME that may be either a GitRepo
	// or a Bundle.
	Kind      string
	Namespace string
	Name      string
	// Commit is a commit or a prefix of one (--commit).
	Commit string
}

// String is the target as the user gave it.
func (t Target) String() string {
	switch {
	case t.Kind == KindCommit:
		return "commit " + t.Commit
	case t.Kind == "":
		return t.Name
	case t.Namespace == "":
		return t.Kind + "/" + t.Name
	}
	return t.Kind + "/" + t.Namespace + "/" + t.Name
}

// ParseTarget reads kubectl-style arguments: gitrepo/NS/NAME, gitrepo/NAME, bundle/NS/NAME,
// bundle/NAME or a bare NAME; commit is --commit. Exactly one of them is given.
func ParseTarget(arg, commit string) (Target, error) {
	switch {
	case arg == "" && commit == "":
		return Target{}, fmt.Errorf("name a GitRepo or Bundle (gitrepo/NS/NAME, bundle/NS/NAME, NAME) or give --commit SHA")
	case arg != "" && commit != "":
		return Target{}, fmt.Errorf("give either %q or --commit, not both", arg)
	case commit != "":
		return parseCommit(commit)
	}
	parts := strings.Split(arg, "/")
	if len(parts) == 1 {
		return Target{Name: arg}, checkName(arg, arg)
	}
	kind, ok := kindOf(parts[0])
	if !ok || len(parts) > 3 {
		return Target{}, fmt.Errorf("%q: want gitrepo/NS/NAME, bundle/NS/NAME or NAME", arg)
	}
	t := Target{Kind: kind, Name: parts[len(parts)-1]}
	if len(parts) == 3 {
		t.Namespace = parts[1]
		if err := checkName(arg, t.Namespace); err != nil {
			return Target{}, err
		}
	}
	return t, checkName(arg, t.Name)
}

func parseCommit(c string) (Target, error) {
	c = strings.ToLower(c)
	if len(c) < 4 || len(c) > 64 || strings.Trim(c, "0123456789abcdef") != "" {
		return Target{}, fmt.Errorf("--commit %q: want a commit SHA or a prefix of at least 4 hex digits", c)
	}
	return Target{Kind: KindCommit, Commit: c}, nil
}

func kindOf(s string) (string, bool) {
	switch strings.ToLower(s) {
	case "gitrepo", "gitrepos", "gitrepo.fleet.cattle.io", "gitrepos.fleet.cattle.io":
		return KindGitRepo, true
	case "bundle", "bundles", "bundle.fleet.cattle.io", "bundles.fleet.cattle.io":
		return KindBundle, true
	}
	return "", false
}

func checkName(arg, s string) error {
	if s == "" || len(s) > 253 || strings.ContainsAny(s, " \t\n\\") {
		return fmt.Errorf("%q: %q is not a Kubernetes name", arg, s)
	}
	return nil
}

// Subject is what a target resolved to on one management cluster: a GitRepo's pipeline (Repo
// nil when only its Bundles were read) or one Bundle, and the commit to follow.
type Subject struct {
	Management *snapshot.Cluster
	// RepoNamespace/RepoName name the GitRepo; empty for a Bundle that no GitRepo made.
	RepoNamespace, RepoName string
	Pipeline                *fleet.RepoPipeline
	Bundles                 []*fleetv1.Bundle
	Commit                  string
	// Note says why the commit followed is not the one asked for.
	Note string
}

// NoMatchError says the target named nothing in the input.
type NoMatchError struct {
	Target Target
	Known  []string
}

func (e *NoMatchError) Error() string {
	msg := fmt.Sprintf("%s matches no GitRepo, Bundle or commit in the input", e.Target)
	if len(e.Known) > 0 {
		msg += " (it holds: " + strings.Join(e.Known, ", ") + ")"
	} else {
		msg += " (it holds no GitRepo and no Bundle)"
	}
	return msg
}

// AmbiguousError says a bare name or a commit prefix matched more than one thing.
type AmbiguousError struct {
	Target  Target
	Matches []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s matches %s: name one of them", e.Target, strings.Join(e.Matches, ", "))
}

// Resolve finds the target in the snapshot's management clusters.
func Resolve(s *snapshot.Snapshot, t Target) (*Subject, error) {
	var found []*Subject
	for _, m := range managementClusters(s) {
		found = append(found, resolveOn(m, t)...)
	}
	switch len(found) {
	case 0:
		return nil, &NoMatchError{Target: t, Known: known(s)}
	case 1:
		return found[0], nil
	}
	var names []string
	for _, f := range found {
		names = append(names, f.label())
	}
	return nil, &AmbiguousError{Target: t, Matches: names}
}

func (s *Subject) label() string {
	if len(s.Bundles) == 1 && (s.Pipeline == nil || s.RepoName == "") {
		b := s.Bundles[0]
		return "bundle/" + b.Namespace + "/" + b.Name
	}
	return "gitrepo/" + s.RepoNamespace + "/" + s.RepoName
}

// managementClusters are the clusters holding Fleet's pipeline objects: the management role,
// or any cluster with GitRepos or Bundles (a single-cluster bundle of the management cluster).
func managementClusters(s *snapshot.Snapshot) []*snapshot.Cluster {
	var out []*snapshot.Cluster
	for _, c := range s.Clusters {
		if c.Role == snapshot.Management || len(c.GitRepos) > 0 || len(c.Bundles) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func resolveOn(m *snapshot.Cluster, t Target) []*Subject {
	switch t.Kind {
	case KindGitRepo:
		return repoSubjects(m, t)
	case KindBundle:
		return bundleSubjects(m, t)
	case KindCommit:
		return commitSubjects(m, t.Commit)
	}
	if r := repoSubjects(m, t); len(r) > 0 {
		return r
	}
	return bundleSubjects(m, t)
}

// repoSubjects are the GitRepos named so, or, when the GitRepo itself was not read, the
// Bundles labelled with its name.
func repoSubjects(m *snapshot.Cluster, t Target) []*Subject {
	var out []*Subject
	for _, p := range fleet.Pipelines(m) {
		if p.Repo.Name == t.Name && (t.Namespace == "" || p.Repo.Namespace == t.Namespace) {
			out = append(out, &Subject{Management: m, RepoNamespace: p.Repo.Namespace, RepoName: p.Repo.Name, Pipeline: p, Bundles: p.Bundles, Commit: fleet.NextCommit(p.Repo)})
		}
	}
	if len(out) > 0 {
		return out
	}
	byNS := map[string][]*fleetv1.Bundle{}
	for _, b := range m.Bundles {
		if b.Labels[fleet.LabelRepoName] == t.Name && (t.Namespace == "" || b.Namespace == t.Namespace) {
			byNS[b.Namespace] = append(byNS[b.Namespace], b)
		}
	}
	for _, ns := range sortedKeys(byNS) {
		bs := byNS[ns]
		out = append(out, &Subject{Management: m, RepoNamespace: ns, RepoName: t.Name, Bundles: bs, Commit: newestCommit(bs)})
	}
	return out
}

func bundleSubjects(m *snapshot.Cluster, t Target) []*Subject {
	var out []*Subject
	for _, b := range m.Bundles {
		if b.Name == t.Name && (t.Namespace == "" || b.Namespace == t.Namespace) {
			out = append(out, bundleSubject(m, b))
		}
	}
	return out
}

func bundleSubject(m *snapshot.Cluster, b *fleetv1.Bundle) *Subject {
	s := &Subject{Management: m, Bundles: []*fleetv1.Bundle{b}, Commit: b.Labels[fleet.LabelCommit]}
	repo := b.Labels[fleet.LabelRepoName]
	if repo == "" {
		return s
	}
	s.RepoNamespace, s.RepoName = b.Namespace, repo
	for _, p := range fleet.Pipelines(m) {
		if p.Repo.Namespace == b.Namespace && p.Repo.Name == repo {
			s.Pipeline = p
			// The change to follow is the GitRepo's newest commit, not the one the Bundle
			// was last built from.
			if p.Repo.Status.Commit != "" {
				s.Commit = p.Repo.Status.Commit
			}
		}
	}
	return s
}

// commitSubjects are the GitRepos whose status names the commit, else those whose Bundles
// carry it; the commit followed is the full one found.
func commitSubjects(m *snapshot.Cluster, prefix string) []*Subject {
	var out []*Subject
	seen := map[string]bool{}
	for _, p := range fleet.Pipelines(m) {
		for _, c := range []string{p.Repo.Status.Commit, p.Repo.Status.WebhookCommit, p.Repo.Status.PollingCommit} {
			if c != "" && strings.HasPrefix(c, prefix) && !seen[p.Repo.Namespace+"/"+p.Repo.Name] {
				seen[p.Repo.Namespace+"/"+p.Repo.Name] = true
				out = append(out, &Subject{Management: m, RepoNamespace: p.Repo.Namespace, RepoName: p.Repo.Name, Pipeline: p, Bundles: p.Bundles, Commit: c})
			}
		}
	}
	for _, b := range m.Bundles {
		c, repo := b.Labels[fleet.LabelCommit], b.Labels[fleet.LabelRepoName]
		if c == "" || !strings.HasPrefix(c, prefix) || seen[b.Namespace+"/"+repo] {
			continue
		}
		seen[b.Namespace+"/"+repo] = true
		for _, s := range repoSubjects(m, Target{Namespace: b.Namespace, Name: repo}) {
			followNewer(s, c)
			out = append(out, s)
		}
	}
	return out
}

// followNewer follows the GitRepo's newest commit when the one asked for is only on Bundles:
// the GitRepo has moved past it, and where the newer change is, the older one is too or was
// replaced.
func followNewer(s *Subject, asked string) {
	if s.Pipeline == nil || s.Pipeline.Repo.Status.Commit == "" || s.Pipeline.Repo.Status.Commit == asked {
		s.Commit = asked
		return
	}
	s.Commit = s.Pipeline.Repo.Status.Commit
	s.Note = "commit " + short(asked) + " is not the GitRepo's newest; following " + short(s.Commit) + ", which replaced it"
}

// newestCommit is, when the GitRepo was not read, the commit of the Bundle whose conditions
// changed last: the one the pipeline most recently wrote.
func newestCommit(bs []*fleetv1.Bundle) string {
	best, commit := "", ""
	for _, b := range bs {
		for _, c := range b.Status.Conditions {
			if c.LastUpdateTime > best && b.Labels[fleet.LabelCommit] != "" {
				best, commit = c.LastUpdateTime, b.Labels[fleet.LabelCommit]
			}
		}
	}
	return commit
}

func known(s *snapshot.Snapshot) []string {
	var out []string
	for _, m := range managementClusters(s) {
		for _, g := range m.GitRepos {
			out = append(out, "gitrepo/"+g.Namespace+"/"+g.Name)
		}
		for _, b := range m.Bundles {
			out = append(out, "bundle/"+b.Namespace+"/"+b.Name)
		}
	}
	if len(out) > 12 {
		out = append(out[:12], fmt.Sprintf("and %d more", len(out)-12))
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
