package removedapi

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	appsv1beta1 "k8s.io/api/apps/v1beta1"
	appsv1beta2 "k8s.io/api/apps/v1beta2"
	authenticationv1 "k8s.io/api/authentication/v1"
	authenticationv1alpha1 "k8s.io/api/authentication/v1alpha1"
	authenticationv1beta1 "k8s.io/api/authentication/v1beta1"
	authorizationv1beta1 "k8s.io/api/authorization/v1beta1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	batchv1beta1 "k8s.io/api/batch/v1beta1"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1alpha1 "k8s.io/api/certificates/v1alpha1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	discoveryv1 "k8s.io/api/discovery/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	nodev1 "k8s.io/api/node/v1"
	nodev1beta1 "k8s.io/api/node/v1beta1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	storagev1alpha1 "k8s.io/api/storage/v1alpha1"
	storagev1beta1 "k8s.io/api/storage/v1beta1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	storagemigrationv1beta1 "k8s.io/api/storagemigration/v1beta1"
)

// prerelease maps each k8s.io/api directory of a served group with prerelease-lifecycle
// methods (that remove something) to its scheme builder. TestTableCoversTheDependency fails
// when the module gains one that is missing here.
func prerelease() map[string]func(*runtime.Scheme) error {
	return map[string]func(*runtime.Scheme) error{
		"admissionregistration/v1alpha1": admissionregistrationv1alpha1.AddToScheme, "admissionregistration/v1beta1": admissionregistrationv1beta1.AddToScheme,
		"apps/v1beta1": appsv1beta1.AddToScheme, "apps/v1beta2": appsv1beta2.AddToScheme,
		"authentication/v1alpha1": authenticationv1alpha1.AddToScheme, "authentication/v1beta1": authenticationv1beta1.AddToScheme,
		"authorization/v1beta1": authorizationv1beta1.AddToScheme, "batch/v1beta1": batchv1beta1.AddToScheme,
		"certificates/v1alpha1": certificatesv1alpha1.AddToScheme, "certificates/v1beta1": certificatesv1beta1.AddToScheme,
		"coordination/v1alpha2": coordinationv1alpha2.AddToScheme, "coordination/v1beta1": coordinationv1beta1.AddToScheme,
		"discovery/v1beta1": discoveryv1beta1.AddToScheme, "events/v1beta1": eventsv1beta1.AddToScheme,
		"extensions/v1beta1":  extensionsv1beta1.AddToScheme,
		"flowcontrol/v1beta1": flowcontrolv1beta1.AddToScheme, "flowcontrol/v1beta2": flowcontrolv1beta2.AddToScheme, "flowcontrol/v1beta3": flowcontrolv1beta3.AddToScheme,
		"networking/v1beta1": networkingv1beta1.AddToScheme, "node/v1beta1": nodev1beta1.AddToScheme,
		"policy/v1beta1": policyv1beta1.AddToScheme, "rbac/v1beta1": rbacv1beta1.AddToScheme,
		"resource/v1alpha3": resourcev1alpha3.AddToScheme, "resource/v1beta1": resourcev1beta1.AddToScheme, "resource/v1beta2": resourcev1beta2.AddToScheme,
		"scheduling/v1beta1": schedulingv1beta1.AddToScheme,
		"storage/v1alpha1":   storagev1alpha1.AddToScheme, "storage/v1beta1": storagev1beta1.AddToScheme,
		"storagemigration/v1beta1": storagemigrationv1beta1.AddToScheme,
	}
}

// notObjects are k8s.io/api directories with lifecycle methods that never appear in a manifest.
var notObjects = []string{"admission/v1beta1", "apidiscovery/v2beta1", "lifecycle/v1alpha1"}

// subresources are kinds with lifecycle methods that are subresource bodies, never objects in
// a manifest, and are left out of the table.
var subresources = map[string]bool{"Scale": true, "DeploymentRollback": true}

// gaBuilders register the GA versions the table names as replacements, to read their
// APILifecycleIntroduced.
var gaBuilders = []func(*runtime.Scheme) error{
	admissionregistrationv1.AddToScheme, authenticationv1.AddToScheme, autoscalingv2.AddToScheme, batchv1.AddToScheme,
	certificatesv1.AddToScheme, discoveryv1.AddToScheme, eventsv1.AddToScheme, flowcontrolv1.AddToScheme,
	networkingv1.AddToScheme, nodev1.AddToScheme, policyv1.AddToScheme, resourcev1.AddToScheme,
	storagev1.AddToScheme, storagemigrationv1.AddToScheme,
}

type lifecycleOf struct {
	introduced, deprecated, removed string
	replacement                     schema.GroupVersionKind
}

// lifecycles reads the generated lifecycle methods of every object kind the builders register.
func lifecycles(t *testing.T, builders []func(*runtime.Scheme) error) map[string]lifecycleOf {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range builders {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]lifecycleOf{}
	for gvk, typ := range s.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		obj := reflect.New(typ).Interface()
		var l lifecycleOf
		if o, ok := obj.(interface{ APILifecycleIntroduced() (int, int) }); ok {
			l.introduced = release(o.APILifecycleIntroduced())
		}
		if o, ok := obj.(interface{ APILifecycleDeprecated() (int, int) }); ok {
			l.deprecated = release(o.APILifecycleDeprecated())
		}
		if o, ok := obj.(interface{ APILifecycleRemoved() (int, int) }); ok {
			l.removed = release(o.APILifecycleRemoved())
		}
		if o, ok := obj.(interface {
			APILifecycleReplacement() schema.GroupVersionKind
		}); ok {
			l.replacement = o.APILifecycleReplacement()
		}
		if l != (lifecycleOf{}) {
			out[key(gvk.Group, gvk.Version, gvk.Kind)] = l
		}
	}
	return out
}

func release(major, minor int) string { return fmt.Sprintf("%d.%d", major, minor) }

func prereleaseBuilders() []func(*runtime.Scheme) error {
	var out []func(*runtime.Scheme) error
	for _, b := range prerelease() {
		out = append(out, b)
	}
	return out
}

// chain lists the steps of a row's migration chain, its own Next first.
func chain(r Removal) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for next := r.Next; next.Kind != "" && len(out) < 8; {
		out = append(out, next)
		step, ok := index().byKey[key(next.Group, next.Version, next.Kind)]
		if !ok {
			break
		}
		next = step.Next
	}
	return out
}

// Every row whose type is still in k8s.io/api says what its generated lifecycle methods say:
// introduced, deprecated and removed in the same releases, and the replacement the type
// reports is a step of the row's chain (the row may go further: flowcontrol v1beta1 reports
// v1beta3, itself removed in 1.32; the table follows on to v1). Every type that reports a
// removal has a row.
func TestRowsMatchLifecycleMethods(t *testing.T) {
	types := lifecycles(t, prereleaseBuilders())
	checked := 0
	for _, r := range index().all {
		l, ok := types[key(r.Group, r.Version, r.Kind)]
		if !ok {
			continue
		}
		checked++
		if r.Introduced != l.introduced || r.DeprecatedIn != l.deprecated || r.RemovedIn != l.removed {
			t.Errorf("%s %s: table says introduced %s, deprecated %s, removed %s; k8s.io/api says %s, %s, %s",
				r.APIVersion(), r.Kind, r.Introduced, r.DeprecatedIn, r.RemovedIn, l.introduced, l.deprecated, l.removed)
		}
		if l.replacement.Kind == "" {
			continue
		}
		want := l.replacement
		if r.Kind == "IngressClass" && want.Kind == "IngressClassList" {
			// networking/v1beta1's generated method names the list kind; the object kind is meant.
			want.Kind = "IngressClass"
		}
		found := false
		for _, step := range chain(r) {
			found = found || step == want
		}
		if !found {
			t.Errorf("%s %s: k8s.io/api names replacement %s, which is not on the table's chain %v", r.APIVersion(), r.Kind, want, chain(r))
		}
	}
	for k, l := range types {
		gvk, kind, _ := strings.Cut(k, "|")
		if l.removed == "" || subresources[kind] {
			continue
		}
		if _, ok := index().byKey[k]; !ok {
			t.Errorf("k8s.io/api %s %s is removed in %s but has no row", gvk, kind, l.removed)
		}
	}
	if checked < 80 {
		t.Errorf("only %d rows checked against k8s.io/api", checked)
	}
}

// Each GA replacement's first release (gaSince) is the one its type reports, and a GA version
// that came after the row it replaces was deprecated is listed there, so At never offers it
// to a cluster that does not serve it yet.
func TestGASinceMatchesLifecycleMethods(t *testing.T) {
	types := lifecycles(t, gaBuilders)
	for _, r := range index().all {
		steps := chain(r)
		if len(steps) == 0 {
			continue
		}
		end := steps[len(steps)-1]
		l, ok := types[key(end.Group, end.Version, end.Kind)]
		if _, isRow := index().byKey[key(end.Group, end.Version, end.Kind)]; isRow || !ok || l.introduced == "" {
			continue
		}
		since := gaSince()[gaKey(end)]
		if since != "" && since != l.introduced {
			t.Errorf("gaSince %s = %s; k8s.io/api says %s", gaKey(end), since, l.introduced)
		}
		first := r.DeprecatedIn
		if first == "" {
			first = r.RemovedIn
		}
		_, firstMinor, _ := ParseVersion(first)
		if since == "" && !atOrAfter(l.introduced, firstMinor) {
			t.Errorf("%s %s (deprecated or removed in %s) leads to %s, served from %s: list it in gaSince", r.APIVersion(), r.Kind, first, end, l.introduced)
		}
	}
}
