package removedapi

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	admissionregistrationv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	appsv1beta1 "k8s.io/api/apps/v1beta1"
	appsv1beta2 "k8s.io/api/apps/v1beta2"
	authenticationv1alpha1 "k8s.io/api/authentication/v1alpha1"
	authenticationv1beta1 "k8s.io/api/authentication/v1beta1"
	authorizationv1beta1 "k8s.io/api/authorization/v1beta1"
	batchv1beta1 "k8s.io/api/batch/v1beta1"
	certificatesv1alpha1 "k8s.io/api/certificates/v1alpha1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	nodev1beta1 "k8s.io/api/node/v1beta1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1alpha1 "k8s.io/api/storage/v1alpha1"
	storagev1beta1 "k8s.io/api/storage/v1beta1"
	storagemigrationv1beta1 "k8s.io/api/storagemigration/v1beta1"
)

// schemeBuilders are the k8s.io/api packages of servable groups that carry prerelease-lifecycle
// methods. A test lists the module's zz_generated.prerelease-lifecycle.go files and fails when
// one of a served group is missing here (admission, apidiscovery and lifecycle are request or
// discovery types, never objects in a manifest).
var schemeBuilders = []func(*runtime.Scheme) error{
	admissionregistrationv1alpha1.AddToScheme, admissionregistrationv1beta1.AddToScheme,
	appsv1beta1.AddToScheme, appsv1beta2.AddToScheme,
	authenticationv1alpha1.AddToScheme, authenticationv1beta1.AddToScheme,
	authorizationv1beta1.AddToScheme,
	batchv1beta1.AddToScheme,
	certificatesv1alpha1.AddToScheme, certificatesv1beta1.AddToScheme,
	coordinationv1alpha2.AddToScheme, coordinationv1beta1.AddToScheme,
	discoveryv1beta1.AddToScheme,
	eventsv1beta1.AddToScheme,
	extensionsv1beta1.AddToScheme,
	flowcontrolv1beta1.AddToScheme, flowcontrolv1beta2.AddToScheme, flowcontrolv1beta3.AddToScheme,
	networkingv1beta1.AddToScheme,
	nodev1beta1.AddToScheme,
	policyv1beta1.AddToScheme,
	rbacv1beta1.AddToScheme,
	resourcev1alpha3.AddToScheme, resourcev1beta1.AddToScheme, resourcev1beta2.AddToScheme,
	schedulingv1beta1.AddToScheme,
	storagev1alpha1.AddToScheme, storagev1beta1.AddToScheme,
	storagemigrationv1beta1.AddToScheme,
}

// schemeDirs are the k8s.io/api directories schemeBuilders covers, for the completeness test.
var schemeDirs = []string{
	"admissionregistration/v1alpha1", "admissionregistration/v1beta1", "apps/v1beta1", "apps/v1beta2",
	"authentication/v1alpha1", "authentication/v1beta1", "authorization/v1beta1", "batch/v1beta1",
	"certificates/v1alpha1", "certificates/v1beta1", "coordination/v1alpha2", "coordination/v1beta1",
	"discovery/v1beta1", "events/v1beta1", "extensions/v1beta1", "flowcontrol/v1beta1",
	"flowcontrol/v1beta2", "flowcontrol/v1beta3", "networking/v1beta1", "node/v1beta1",
	"policy/v1beta1", "rbac/v1beta1", "resource/v1alpha3", "resource/v1beta1", "resource/v1beta2",
	"scheduling/v1beta1", "storage/v1alpha1", "storage/v1beta1", "storagemigration/v1beta1",
}

// notObjects are k8s.io/api directories with lifecycle methods that never appear in a manifest.
var notObjects = []string{"admission/v1beta1", "apidiscovery/v2beta1", "lifecycle/v1alpha1"}

// filled are kinds whose packages were deleted from k8s.io/api, so no generated method knows
// them. Each cites the Kubernetes deprecated API migration guide
// (kubernetes.io/docs/reference/using-api/deprecation-guide/) and the release notes.
var filled = []Removal{
	{Group: "policy", Version: "v1beta1", Kind: "PodSecurityPolicy", RemovedIn: "1.25",
		Source: "deprecation guide v1.25: PodSecurityPolicy removed, no replacement (Pod Security Admission); kubernetes#109798"},
	{Group: "extensions", Version: "v1beta1", Kind: "PodSecurityPolicy", RemovedIn: "1.16",
		Replacement: schema.GroupVersionKind{Group: "policy", Version: "v1beta1", Kind: "PodSecurityPolicy"},
		Source:      "deprecation guide v1.16: extensions/v1beta1 PodSecurityPolicy → policy/v1beta1"},
	{Group: "autoscaling", Version: "v2beta1", Kind: "HorizontalPodAutoscaler", RemovedIn: "1.25",
		Replacement: schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
		Source:      "deprecation guide v1.25: autoscaling/v2beta1 HorizontalPodAutoscaler → autoscaling/v2"},
	{Group: "autoscaling", Version: "v2beta2", Kind: "HorizontalPodAutoscaler", RemovedIn: "1.26",
		Replacement: schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
		Source:      "deprecation guide v1.26: autoscaling/v2beta2 HorizontalPodAutoscaler → autoscaling/v2"},
	{Group: "apiextensions.k8s.io", Version: "v1beta1", Kind: "CustomResourceDefinition", RemovedIn: "1.22",
		Replacement: schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
		Source:      "deprecation guide v1.22: apiextensions.k8s.io/v1beta1 CustomResourceDefinition → v1"},
	{Group: "apiregistration.k8s.io", Version: "v1beta1", Kind: "APIService", RemovedIn: "1.22",
		Replacement: schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"},
		Source:      "deprecation guide v1.22: apiregistration.k8s.io/v1beta1 APIService → v1"},
}

// review marks replacements that change the schema, so rewriting the apiVersion alone does not
// give a valid object (from the deprecation guide's "notable changes" for each). "*" covers
// every kind of that group/version.
var review = map[string]string{
	key("extensions", "v1beta1", "Ingress"):                            "networking.k8s.io/v1 Ingress renames backend.serviceName/servicePort to backend.service.name/port and requires pathType",
	key("networking.k8s.io", "v1beta1", "Ingress"):                     "networking.k8s.io/v1 Ingress renames backend.serviceName/servicePort to backend.service.name/port and requires pathType",
	key("extensions", "v1beta1", "Deployment"):                         "apps/v1 requires spec.selector (immutable) and changes defaults (revisionHistoryLimit, progressDeadlineSeconds)",
	key("extensions", "v1beta1", "DaemonSet"):                          "apps/v1 requires spec.selector (immutable) and defaults updateStrategy to RollingUpdate",
	key("extensions", "v1beta1", "ReplicaSet"):                         "apps/v1 requires spec.selector (immutable)",
	key("apps", "v1beta1", "*"):                                        "apps/v1 requires spec.selector (immutable) and changes defaults",
	key("apps", "v1beta2", "*"):                                        "apps/v1 requires spec.selector (immutable)",
	key("autoscaling", "v2beta1", "HorizontalPodAutoscaler"):           "autoscaling/v2 replaces targetAverageUtilization/targetAverageValue with a target block",
	key("admissionregistration.k8s.io", "v1beta1", "*"):                "admissionregistration.k8s.io/v1 requires sideEffects and admissionReviewVersions on each webhook",
	key("apiextensions.k8s.io", "v1beta1", "CustomResourceDefinition"): "apiextensions.k8s.io/v1 requires a structural schema per version and moves validation, subresources and printer columns into spec.versions",
	key("certificates.k8s.io", "v1beta1", "CertificateSigningRequest"): "certificates.k8s.io/v1 requires spec.signerName",
	key("discovery.k8s.io", "v1beta1", "EndpointSlice"):                "discovery.k8s.io/v1 replaces endpoints[].topology with nodeName and zone",
	key("events.k8s.io", "v1beta1", "Event"):                           "events.k8s.io/v1 renames deprecatedFirstTimestamp/deprecatedLastTimestamp/deprecatedCount and forbids some updates",
	key("policy", "v1beta1", "PodSecurityPolicy"):                      "PodSecurityPolicy has no replacement: remove it and use Pod Security Admission",
}
