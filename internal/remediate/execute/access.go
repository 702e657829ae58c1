package execute

import (
	"context"
	"fmt"
	"sort"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/plural"
	"github.com/unstick-dev/unstick/internal/remediate"
)

// Permission is one request a step makes that the caller may not be allowed.
type Permission struct {
	Cluster  string `json:"cluster"`
	Verb     string `json:"verb"`
	Group    string `json:"group"`
	Resource string `json:"resource"`
	// Subresource is "status" for a write to the status subresource.
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	// Step is the step that needs it.
	Step string `json:"step"`
}

func (p Permission) String() string {
	res := p.Resource
	if p.Group != "" {
		res += "." + p.Group
	}
	if p.Subresource != "" {
		res += "/" + p.Subresource
	}
	where := "cluster-wide"
	if p.Namespace != "" {
		where = "in namespace " + p.Namespace
	}
	name := ""
	if p.Name != "" {
		name = " " + p.Name
	}
	return fmt.Sprintf("%s: %s %s%s %s", p.Cluster, p.Verb, res, name, where)
}

// ForbiddenError lists every permission the plan needs and the caller lacks. It is raised
// before the first write of a run, so nothing is changed.
type ForbiddenError struct{ Missing []Permission }

func (e *ForbiddenError) Error() string {
	var lines []string
	for _, p := range e.Missing {
		lines = append(lines, "  "+p.String())
	}
	return fmt.Sprintf("the credentials used lack %s the plan needs, so nothing was changed (deploy/rbac/fix.yaml grants them):\n%s",
		plural.Of(len(e.Missing), "permission"), strings.Join(lines, "\n"))
}

// needs lists the requests a step makes: reading what it backs up and every write.
func (e *Executor) needs(ctx context.Context, cl *cluster, st remediate.Step) ([]Permission, error) {
	var out []Permission
	add := func(o remediate.Object, verbs ...string) error {
		gvr, namespaced, err := cl.resource(o.APIVersion, o.Kind)
		if err != nil {
			return err
		}
		ns := o.Namespace
		if !namespaced {
			ns = ""
		}
		for _, v := range verbs {
			name := o.Name
			if v == "create" {
				name = "" // a name is not known to the authorizer before creation
			}
			out = append(out, Permission{Cluster: cl.name, Verb: v, Group: gvr.Group, Resource: gvr.Resource, Namespace: ns, Name: name, Step: st.ID})
		}
		return nil
	}
	for _, o := range st.Touches {
		var err error
		switch {
		case o.Create:
			err = add(o, "create")
		case st.Action == remediate.DeleteJob || st.Action == remediate.DeleteBundleDeployment:
			err = add(o, "get", "delete")
		case st.Action == remediate.HelmRollback || st.Action == remediate.HelmMarkFailed || st.Action == remediate.HelmRewriteAPIs:
			err = add(o, "get", "update")
		case st.Action == remediate.TrimStoredVersions:
			if err = add(o, "get"); err == nil {
				out = append(out, Permission{Cluster: cl.name, Verb: "update", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Subresource: "status", Name: o.Name, Step: st.ID})
			}
		default:
			err = add(o, "get", "patch")
		}
		if err != nil {
			return nil, err
		}
	}
	switch st.Action {
	case remediate.HelmRewriteAPIs:
		out = append(out, Permission{Cluster: cl.name, Verb: "list", Resource: "secrets", Namespace: st.Rewrite.Namespace, Step: st.ID})
	case remediate.MigrateStorage:
		// Every object of the CRD is listed and written back (a StorageVersionMigration,
		// when one is served and allowed, is optional: without it unstick writes them).
		for _, v := range []string{"list", "update"} {
			out = append(out, Permission{Cluster: cl.name, Verb: v, Group: st.Storage.Group, Resource: st.Storage.Plural, Step: st.ID})
		}
	}
	if st.Action == remediate.HelmRollback {
		// Helm's storage lists a release's Secrets by label; the rollback re-applies the
		// target revision's manifest objects.
		out = append(out, Permission{Cluster: cl.name, Verb: "list", Resource: "secrets", Namespace: st.Helm.Namespace, Step: st.ID})
		// Only the objects the release may write are asked for: a refused object is never
		// written, and a manifest that cannot be read refuses its own step when it runs
		// without stopping the others here.
		manifest, err := e.targetManifest(cl, st)
		if err != nil {
			return out, nil
		}
		items, err := e.reviewManifest(ctx, cl, st.Helm.Namespace, st.Helm.Release, manifest, false)
		if err != nil {
			return out, nil
		}
		for _, it := range items {
			o := it.verdict.Object
			if it.verdict.Op == remediate.OpRefused || it.verdict.Op == remediate.OpLeftAlone {
				continue
			}
			if err := add(o, "get", "patch"); err != nil {
				return nil, err
			}
			if it.live == nil {
				if err := add(o, "create"); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// checkAccess asks each cluster, with SelfSubjectAccessReviews, whether the caller may make
// every request of the steps, and returns what it may not.
func (e *Executor) checkAccess(ctx context.Context, steps []remediate.Step) ([]Permission, error) {
	seen := map[Permission]bool{}
	var missing []Permission
	for _, st := range steps {
		cl, err := e.clients.get(st.Cluster)
		if err != nil {
			return nil, err
		}
		perms, err := e.needs(ctx, cl, st)
		if err != nil {
			return nil, fmt.Errorf("step %s: %w", st.ID, err)
		}
		for _, p := range perms {
			key := p
			key.Step = ""
			if seen[key] {
				continue
			}
			seen[key] = true
			r, err := cl.kube.Authz.SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: p.Namespace, Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Name: p.Name,
				}},
			}, metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("%s: asking the API server what unstick may do: %w", cl.name, err)
			}
			if !r.Status.Allowed {
				missing = append(missing, p)
			}
		}
	}
	sort.SliceStable(missing, func(i, j int) bool { return missing[i].String() < missing[j].String() })
	return missing, nil
}
