package removedapi

// The table of built-in APIs Kubernetes deprecates and removes, row by row with its source.
//
// Sources:
//   - the Kubernetes deprecated API migration guide,
//     https://kubernetes.io/docs/reference/using-api/deprecation-guide/ (cited as "guide v1.N",
//     its section for the release that removes the API): removal releases, replacements and the
//     notable changes that make a replacement more than an apiVersion rewrite;
//   - the generated prerelease-lifecycle methods of k8s.io/api (APILifecycleIntroduced,
//     APILifecycleDeprecated, APILifecycleRemoved, APILifecycleReplacement in each group's
//     zz_generated.prerelease-lifecycle.go, cited as "k8s.io/api g/v"): the same methods
//     kube-apiserver's RemoveDeletedKinds uses to stop serving a version. A test checks every
//     row whose type is still in k8s.io/api against them;
//   - for types deleted from k8s.io/api (no method left to ask), the release that deleted the
//     package (cited as "k8s.io/api v0.N: g/v deleted").
//
// Rows name the immediate successor (Next) as Kubernetes migrated it; Removal.Replacement and
// Removal.At follow that chain to the newest version a release still serves, so a row never
// points at a version that is itself removed (flowcontrol v1beta1 → v1, not v1beta3).

const (
	guide = "https://kubernetes.io/docs/reference/using-api/deprecation-guide/"

	reviewApps        = "apps/v1 requires spec.selector (immutable) and changes defaults"
	reviewIngress     = "networking.k8s.io/v1 Ingress renames backend.serviceName/servicePort to backend.service.name/port and requires pathType"
	reviewWebhook     = "admissionregistration.k8s.io/v1 requires sideEffects and admissionReviewVersions on each webhook"
	reviewPSP         = "PodSecurityPolicy has no replacement: remove it and use Pod Security Admission (pod-security.kubernetes.io/ namespace labels)"
	reviewPLC         = "flowcontrol.apiserver.k8s.io/v1 renames spec.limited.assuredConcurrencyShares to nominalConcurrencyShares"
	reviewDRAClassic  = "resource.k8s.io/v1alpha3 replaced classic DRA with structured parameters: claims request devices of a DeviceClass selected by CEL, not a ResourceClass and driver parameters; rewrite the claim"
	reviewDRARequests = "resource.k8s.io/v1 moves a device request's deviceClassName, selectors, allocationMode and count under spec.devices.requests[].exactly"
	reviewAlpha       = "an alpha API: its successor's schema differs; compare the object with `kubectl explain` of the replacement before applying it"
	reviewEndpoints   = "EndpointSlice is another kind with its own schema (endpoints[].addresses, ports, the kubernetes.io/service-name label): write it anew; a Service with a selector gets its EndpointSlices from the control plane"
)

// row is one group/version and the kinds it served, with one lifecycle.
type row struct {
	gv         string   // "policy/v1beta1"
	kinds      []string // kinds that share this lifecycle
	introduced string   // first release that served it
	deprecated string   // first release that deprecated it; "" when removed without one (alpha)
	removed    string   // first release that does not serve it; "" when never (a GA version)
	next       string   // successor group/version ("" for none); a kind after '|' when it differs
	review     string
	source     string
}

// rows is the table. Kinds that never appear in a manifest (the Scale and DeploymentRollback
// subresources of extensions/v1beta1 and apps/v1beta1/v1beta2) are left out.
func rows() []row {
	return append(append(append(removedBy122(), removedBy125()...), removedAfter125()...), deletedAlpha()...)
}

func removedBy122() []row {
	return []row{
		{"extensions/v1beta1", []string{"DaemonSet", "Deployment"}, "1.1", "1.8", "1.16", "apps/v1", reviewApps, "guide v1.16; k8s.io/api extensions/v1beta1"},
		{"extensions/v1beta1", []string{"ReplicaSet"}, "1.2", "1.8", "1.16", "apps/v1", reviewApps, "guide v1.16; k8s.io/api extensions/v1beta1"},
		{"extensions/v1beta1", []string{"NetworkPolicy"}, "1.3", "1.9", "1.16", "networking.k8s.io/v1", "", "guide v1.16; k8s.io/api extensions/v1beta1"},
		{"extensions/v1beta1", []string{"PodSecurityPolicy"}, "1.3", "1.10", "1.16", "policy/v1beta1", reviewPSP, "guide v1.16 (→ policy/v1beta1, itself removed in v1.25); CHANGELOG-1.10 (moved to policy/v1beta1, extensions/v1beta1 deprecated)"},
		{"apps/v1beta1", []string{"Deployment"}, "1.6", "1.8", "1.16", "apps/v1", reviewApps, "guide v1.16; k8s.io/api apps/v1beta1"},
		{"apps/v1beta1", []string{"StatefulSet"}, "1.5", "1.8", "1.16", "apps/v1", reviewApps, "guide v1.16; k8s.io/api apps/v1beta1"},
		{"apps/v1beta1", []string{"ControllerRevision"}, "1.7", "1.8", "1.16", "apps/v1", reviewApps, "guide v1.16; k8s.io/api apps/v1beta1"},
		{"apps/v1beta2", []string{"ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet"}, "1.8", "1.9", "1.16", "apps/v1", reviewApps, "guide v1.16; k8s.io/api apps/v1beta2"},
		{"extensions/v1beta1", []string{"Ingress"}, "1.1", "1.14", "1.22", "networking.k8s.io/v1", reviewIngress, "guide v1.22; k8s.io/api extensions/v1beta1"},
		{"networking.k8s.io/v1beta1", []string{"Ingress"}, "1.14", "1.19", "1.22", "networking.k8s.io/v1", reviewIngress, "guide v1.22; k8s.io/api networking/v1beta1"},
		{"networking.k8s.io/v1beta1", []string{"IngressClass"}, "1.18", "1.19", "1.22", "networking.k8s.io/v1", "", "guide v1.22 (k8s.io/api networking/v1beta1 names the list kind IngressClassList as its replacement)"},
		{"admissionregistration.k8s.io/v1beta1", []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}, "1.9", "1.16", "1.22", "admissionregistration.k8s.io/v1", reviewWebhook, "guide v1.22; k8s.io/api admissionregistration/v1beta1"},
		{"apiextensions.k8s.io/v1beta1", []string{"CustomResourceDefinition"}, "1.7", "1.16", "1.22", "apiextensions.k8s.io/v1",
			"apiextensions.k8s.io/v1 requires a structural schema per version and moves validation, subresources and printer columns into spec.versions", "guide v1.22"},
		{"apiregistration.k8s.io/v1beta1", []string{"APIService"}, "1.7", "1.19", "1.22", "apiregistration.k8s.io/v1", "", "guide v1.22"},
		{"authentication.k8s.io/v1beta1", []string{"TokenReview"}, "1.4", "1.19", "1.22", "authentication.k8s.io/v1", "", "guide v1.22; k8s.io/api authentication/v1beta1"},
		{"authorization.k8s.io/v1beta1", []string{"LocalSubjectAccessReview", "SelfSubjectAccessReview", "SubjectAccessReview"}, "1.2", "1.19", "1.22", "authorization.k8s.io/v1", "", "guide v1.22; k8s.io/api authorization/v1beta1"},
		{"authorization.k8s.io/v1beta1", []string{"SelfSubjectRulesReview"}, "1.8", "1.19", "1.22", "authorization.k8s.io/v1", "", "guide v1.22; k8s.io/api authorization/v1beta1"},
		{"certificates.k8s.io/v1beta1", []string{"CertificateSigningRequest"}, "1.12", "1.19", "1.22", "certificates.k8s.io/v1", "certificates.k8s.io/v1 requires spec.signerName", "guide v1.22; k8s.io/api certificates/v1beta1"},
		{"coordination.k8s.io/v1beta1", []string{"Lease"}, "1.12", "1.19", "1.22", "coordination.k8s.io/v1", "", "guide v1.22; k8s.io/api coordination/v1beta1"},
		{"rbac.authorization.k8s.io/v1beta1", []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, "1.6", "1.17", "1.22", "rbac.authorization.k8s.io/v1", "", "guide v1.22; k8s.io/api rbac/v1beta1"},
		{"scheduling.k8s.io/v1beta1", []string{"PriorityClass"}, "1.11", "1.14", "1.22", "scheduling.k8s.io/v1", "", "guide v1.22; k8s.io/api scheduling/v1beta1"},
		{"storage.k8s.io/v1beta1", []string{"CSIDriver"}, "1.14", "1.19", "1.22", "storage.k8s.io/v1", "", "guide v1.22; k8s.io/api storage/v1beta1"},
		{"storage.k8s.io/v1beta1", []string{"CSINode"}, "1.14", "1.17", "1.22", "storage.k8s.io/v1", "", "guide v1.22; k8s.io/api storage/v1beta1"},
		{"storage.k8s.io/v1beta1", []string{"StorageClass"}, "1.4", "1.19", "1.22", "storage.k8s.io/v1", "", "guide v1.22; k8s.io/api storage/v1beta1"},
		{"storage.k8s.io/v1beta1", []string{"VolumeAttachment"}, "1.10", "1.19", "1.22", "storage.k8s.io/v1", "", "guide v1.22; k8s.io/api storage/v1beta1"},
	}
}

func removedBy125() []row {
	return []row{
		{"storage.k8s.io/v1alpha1", []string{"CSIStorageCapacity"}, "1.19", "1.21", "1.24", "storage.k8s.io/v1beta1", "", "guide v1.27 (storage.k8s.io/v1); k8s.io/api storage/v1alpha1"},
		{"storage.k8s.io/v1alpha1", []string{"VolumeAttachment"}, "1.9", "1.21", "1.24", "storage.k8s.io/v1", "", "k8s.io/api storage/v1alpha1"},
		{"batch/v1beta1", []string{"CronJob"}, "1.8", "1.21", "1.25", "batch/v1", "", "guide v1.25; k8s.io/api batch/v1beta1"},
		{"discovery.k8s.io/v1beta1", []string{"EndpointSlice"}, "1.16", "1.21", "1.25", "discovery.k8s.io/v1", "discovery.k8s.io/v1 replaces endpoints[].topology with nodeName and zone", "guide v1.25; k8s.io/api discovery/v1beta1"},
		{"events.k8s.io/v1beta1", []string{"Event"}, "1.8", "1.22", "1.25", "events.k8s.io/v1",
			"events.k8s.io/v1 keeps the field names but accepts only type Normal or Warning and requires reportingController, reportingInstance, action, reason and eventTime on a new Event", "guide v1.25; k8s.io/api events/v1beta1"},
		{"autoscaling/v2beta1", []string{"HorizontalPodAutoscaler"}, "1.8", "1.22", "1.25", "autoscaling/v2", "autoscaling/v2 replaces targetAverageUtilization/targetAverageValue with a target block", "guide v1.25"},
		{"policy/v1beta1", []string{"PodDisruptionBudget"}, "1.5", "1.21", "1.25", "policy/v1",
			"an empty spec.selector ({}) matches no pod in policy/v1beta1 and every pod of the namespace in policy/v1 (an unset one matches none in both)", "guide v1.25; k8s.io/api policy/v1beta1"},
		{"policy/v1beta1", []string{"Eviction"}, "1.5", "1.22", "1.25", "policy/v1", "", "guide v1.22 (policy/v1 Eviction); k8s.io/api policy/v1beta1"},
		{"policy/v1beta1", []string{"PodSecurityPolicy"}, "1.10", "1.21", "1.25", "", reviewPSP, "guide v1.25; kubernetes#109798"},
		{"node.k8s.io/v1beta1", []string{"RuntimeClass"}, "1.13", "1.22", "1.25", "node.k8s.io/v1", "", "guide v1.25; k8s.io/api node/v1beta1"},
	}
}

func removedAfter125() []row {
	return []row{
		{"flowcontrol.apiserver.k8s.io/v1beta1", []string{"FlowSchema"}, "1.20", "1.23", "1.26", "flowcontrol.apiserver.k8s.io/v1beta2", "", "guide v1.26; k8s.io/api flowcontrol/v1beta1"},
		{"flowcontrol.apiserver.k8s.io/v1beta1", []string{"PriorityLevelConfiguration"}, "1.20", "1.23", "1.26", "flowcontrol.apiserver.k8s.io/v1beta2", reviewPLC, "guide v1.26; k8s.io/api flowcontrol/v1beta1"},
		{"autoscaling/v2beta2", []string{"HorizontalPodAutoscaler"}, "1.12", "1.23", "1.26", "autoscaling/v2", "", "guide v1.26"},
		{"storage.k8s.io/v1beta1", []string{"CSIStorageCapacity"}, "1.21", "1.24", "1.27", "storage.k8s.io/v1", "", "guide v1.27; k8s.io/api storage/v1beta1"},
		{"flowcontrol.apiserver.k8s.io/v1beta2", []string{"FlowSchema"}, "1.23", "1.26", "1.29", "flowcontrol.apiserver.k8s.io/v1beta3", "", "guide v1.29; k8s.io/api flowcontrol/v1beta2"},
		{"flowcontrol.apiserver.k8s.io/v1beta2", []string{"PriorityLevelConfiguration"}, "1.23", "1.26", "1.29", "flowcontrol.apiserver.k8s.io/v1beta3", reviewPLC, "guide v1.29; k8s.io/api flowcontrol/v1beta2"},
		{"flowcontrol.apiserver.k8s.io/v1beta3", []string{"FlowSchema", "PriorityLevelConfiguration"}, "1.26", "1.29", "1.32", "flowcontrol.apiserver.k8s.io/v1", "", "guide v1.32; k8s.io/api flowcontrol/v1beta3"},
		{"admissionregistration.k8s.io/v1alpha1", []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}, "1.26", "1.29", "1.32", "admissionregistration.k8s.io/v1beta1", "", "k8s.io/api admissionregistration/v1alpha1 (v1 since 1.30)"},
		{"authentication.k8s.io/v1alpha1", []string{"SelfSubjectReview"}, "1.26", "1.29", "1.32", "authentication.k8s.io/v1beta1", "", "k8s.io/api authentication/v1alpha1 (v1 since 1.28)"},
		{"authentication.k8s.io/v1beta1", []string{"SelfSubjectReview"}, "1.27", "1.30", "1.33", "authentication.k8s.io/v1", "", "k8s.io/api authentication/v1beta1"},
		{"admissionregistration.k8s.io/v1beta1", []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}, "1.28", "1.31", "1.34", "admissionregistration.k8s.io/v1", "", "k8s.io/api admissionregistration/v1beta1 (v1 since 1.30)"},
		{"storage.k8s.io/v1alpha1", []string{"VolumeAttributesClass"}, "1.29", "1.32", "1.35", "storage.k8s.io/v1beta1", "", "k8s.io/api storage/v1alpha1 (v1 since 1.34)"},
		{"certificates.k8s.io/v1alpha1", []string{"ClusterTrustBundle"}, "1.26", "1.34", "1.37", "certificates.k8s.io/v1beta1", "", "k8s.io/api certificates/v1alpha1 (v1 since 1.37)"},
		{"networking.k8s.io/v1beta1", []string{"IPAddress", "ServiceCIDR"}, "1.31", "1.34", "1.37", "networking.k8s.io/v1", "", "k8s.io/api networking/v1beta1 (v1 since 1.33)"},
		{"storage.k8s.io/v1beta1", []string{"VolumeAttributesClass"}, "1.31", "1.34", "1.37", "storage.k8s.io/v1", "", "k8s.io/api storage/v1beta1"},
		// Deprecated in a release unstick knows; removal planned (after k8s.io/api v0.37).
		{"admissionregistration.k8s.io/v1alpha1", []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}, "1.32", "1.35", "1.38", "admissionregistration.k8s.io/v1beta1", "", "k8s.io/api admissionregistration/v1alpha1 (v1 since 1.36)"},
		{"admissionregistration.k8s.io/v1beta1", []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}, "1.34", "1.37", "1.40", "admissionregistration.k8s.io/v1", "", "k8s.io/api admissionregistration/v1beta1"},
		{"coordination.k8s.io/v1alpha2", []string{"LeaseCandidate"}, "1.32", "1.35", "1.38", "coordination.k8s.io/v1beta1", "", "k8s.io/api coordination/v1alpha2"},
		{"coordination.k8s.io/v1beta1", []string{"LeaseCandidate"}, "1.33", "1.36", "1.39", "", "", "k8s.io/api coordination/v1beta1 (no GA version yet)"},
		{"resource.k8s.io/v1beta1", []string{"DeviceClass", "ResourceSlice"}, "1.32", "1.35", "1.38", "resource.k8s.io/v1beta2", "", "k8s.io/api resource/v1beta1 (v1 since 1.34)"},
		{"resource.k8s.io/v1beta1", []string{"ResourceClaim", "ResourceClaimTemplate"}, "1.32", "1.35", "1.38", "resource.k8s.io/v1beta2", reviewDRARequests, "k8s.io/api resource/v1beta1 (v1 since 1.34)"},
		{"resource.k8s.io/v1beta2", []string{"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"}, "1.33", "1.36", "1.39", "resource.k8s.io/v1", "", "k8s.io/api resource/v1beta2 (v1 since 1.34)"},
		{"resource.k8s.io/v1alpha3", []string{"DeviceTaintRule"}, "1.33", "1.36", "1.39", "resource.k8s.io/v1beta2", "", "k8s.io/api resource/v1alpha3 (v1 since 1.37)"},
		{"resource.k8s.io/v1beta2", []string{"DeviceTaintRule"}, "1.36", "1.39", "1.42", "resource.k8s.io/v1", "", "k8s.io/api resource/v1beta2"},
		{"resource.k8s.io/v1alpha3", []string{"ResourcePoolStatusRequest"}, "1.36", "1.39", "1.42", "", "", "k8s.io/api resource/v1alpha3"},
		{"certificates.k8s.io/v1beta1", []string{"ClusterTrustBundle"}, "1.33", "1.37", "1.40", "certificates.k8s.io/v1", "", "k8s.io/api certificates/v1beta1"},
		{"certificates.k8s.io/v1beta1", []string{"PodCertificateRequest"}, "1.35", "1.37", "1.40", "certificates.k8s.io/v1", "", "k8s.io/api certificates/v1beta1"},
		{"storagemigration.k8s.io/v1beta1", []string{"StorageVersionMigration"}, "1.35", "1.37", "1.40", "storagemigration.k8s.io/v1", "", "k8s.io/api storagemigration/v1beta1"},
		{"scheduling.k8s.io/v1beta1", []string{"PodGroup", "Workload"}, "1.37", "1.40", "1.43", "", "", "k8s.io/api scheduling/v1beta1 (no GA version yet)"},
		// GA and deprecated: served until a future API version replaces it.
		{"v1", []string{"Endpoints"}, "1.0", "1.33", "", "discovery.k8s.io/v1|EndpointSlice", reviewEndpoints, "k8s.io/api core/v1 Endpoints (\"Deprecated: This API is deprecated in v1.33+. Use discoveryv1.EndpointSlice.\"); KEP-4974"},
	}
}

// deletedAlpha are group/versions whose package k8s.io/api deleted, so no lifecycle method
// is left to check them against. Alpha versions are removed without a deprecation period.
func deletedAlpha() []row {
	return []row{
		{"networking.k8s.io/v1alpha1", []string{"ClusterCIDR"}, "1.25", "", "1.29", "", "", "k8s.io/api v0.29: networking/v1alpha1 ClusterCIDR deleted (the multi-CIDR range allocator moved out of tree)"},
		{"resource.k8s.io/v1alpha2", []string{"ResourceClaim", "ResourceClaimTemplate"}, "1.26", "", "1.31", "resource.k8s.io/v1alpha3", reviewDRAClassic, "k8s.io/api v0.31: resource/v1alpha2 deleted"},
		{"resource.k8s.io/v1alpha2", []string{"ResourceSlice"}, "1.30", "", "1.31", "resource.k8s.io/v1alpha3", reviewDRAClassic, "k8s.io/api v0.31: resource/v1alpha2 deleted"},
		{"resource.k8s.io/v1alpha2", []string{"ResourceClass"}, "1.26", "", "1.31", "resource.k8s.io/v1alpha3|DeviceClass", reviewDRAClassic, "k8s.io/api v0.31: resource/v1alpha2 deleted"},
		{"resource.k8s.io/v1alpha2", []string{"PodSchedulingContext"}, "1.27", "", "1.31", "resource.k8s.io/v1alpha3", "", "k8s.io/api v0.31: resource/v1alpha2 deleted"},
		{"resource.k8s.io/v1alpha2", []string{"ResourceClaimParameters", "ResourceClassParameters"}, "1.30", "", "1.31", "", reviewDRAClassic, "k8s.io/api v0.31: resource/v1alpha2 deleted"},
		{"resource.k8s.io/v1alpha3", []string{"PodSchedulingContext"}, "1.31", "", "1.32", "", "", "k8s.io/api v0.32: resource/v1alpha3 PodSchedulingContext deleted (classic DRA withdrawn)"},
		{"coordination.k8s.io/v1alpha1", []string{"LeaseCandidate"}, "1.31", "", "1.32", "coordination.k8s.io/v1alpha2", reviewAlpha, "k8s.io/api v0.32: coordination/v1alpha1 deleted"},
		{"resource.k8s.io/v1alpha3", []string{"DeviceClass", "ResourceSlice"}, "1.31", "", "1.34", "resource.k8s.io/v1beta1", "", "k8s.io/api v0.34: resource/v1alpha3 deleted but DeviceTaintRule"},
		{"resource.k8s.io/v1alpha3", []string{"ResourceClaim", "ResourceClaimTemplate"}, "1.31", "", "1.34", "resource.k8s.io/v1beta1", reviewDRARequests, "k8s.io/api v0.34: resource/v1alpha3 deleted but DeviceTaintRule"},
		{"storagemigration.k8s.io/v1alpha1", []string{"StorageVersionMigration"}, "1.30", "", "1.35", "storagemigration.k8s.io/v1beta1", reviewAlpha, "k8s.io/api v0.35: storagemigration/v1alpha1 deleted"},
		{"certificates.k8s.io/v1alpha1", []string{"PodCertificateRequest"}, "1.34", "", "1.35", "certificates.k8s.io/v1beta1", reviewAlpha, "k8s.io/api v0.35: certificates/v1alpha1 PodCertificateRequest deleted"},
		{"scheduling.k8s.io/v1alpha1", []string{"Workload"}, "1.35", "", "1.36", "scheduling.k8s.io/v1alpha2", reviewAlpha, "k8s.io/api v0.36: scheduling/v1alpha1 deleted"},
		{"scheduling.k8s.io/v1alpha2", []string{"PodGroup", "Workload"}, "1.36", "", "1.37", "scheduling.k8s.io/v1beta1", reviewAlpha, "k8s.io/api v0.37: scheduling/v1alpha2 deleted"},
	}
}

// gaSince is the first release serving each GA replacement that came after the version it
// replaces was removed or deprecated: Removal.At does not offer it to an older cluster. A GA
// version not listed here is older than every row that leads to it.
func gaSince() map[string]string {
	return map[string]string{
		"flowcontrol.apiserver.k8s.io/v1":                                  "1.29",
		"admissionregistration.k8s.io/v1|ValidatingAdmissionPolicy":        "1.30",
		"admissionregistration.k8s.io/v1|ValidatingAdmissionPolicyBinding": "1.30",
		"admissionregistration.k8s.io/v1|MutatingAdmissionPolicy":          "1.36",
		"admissionregistration.k8s.io/v1|MutatingAdmissionPolicyBinding":   "1.36",
		"authentication.k8s.io/v1|SelfSubjectReview":                       "1.28",
		"networking.k8s.io/v1|IPAddress":                                   "1.33",
		"networking.k8s.io/v1|ServiceCIDR":                                 "1.33",
		"storage.k8s.io/v1|CSIStorageCapacity":                             "1.24",
		"storage.k8s.io/v1|VolumeAttributesClass":                          "1.34",
		"certificates.k8s.io/v1|ClusterTrustBundle":                        "1.37",
		"certificates.k8s.io/v1|PodCertificateRequest":                     "1.37",
		"resource.k8s.io/v1":                                               "1.34",
		"resource.k8s.io/v1|DeviceTaintRule":                               "1.37",
		"storagemigration.k8s.io/v1":                                       "1.37",
		"autoscaling/v2":                                                   "1.23",
		"policy/v1":                                                        "1.21",
		"policy/v1|Eviction":                                               "1.22",
		"events.k8s.io/v1":                                                 "1.19",
		"node.k8s.io/v1":                                                   "1.20",
		"batch/v1|CronJob":                                                 "1.21",
		"discovery.k8s.io/v1":                                              "1.21",
		"networking.k8s.io/v1|Ingress":                                     "1.19",
		"networking.k8s.io/v1|IngressClass":                                "1.19",
	}
}
