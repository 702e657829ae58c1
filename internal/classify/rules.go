package classify

// The rule table.
//
// Order (first match wins), and why:
//
//  1. suc/*            SUC's own Plan/Job messages ("Job ns/name failed on Node n: reason: msg",
//                      drain evictions); they are unambiguous and carry their own reason.
//  2. cluster/clock-skew  a certificate or token that is "not yet valid" is a clock problem,
//                      whatever wrapper carries it (pull, webhook, registration, client-go).
//  3. helm/release-pending, helm/no-deployed-release, fleet/content-missing
//                      exact upstream sentences that name the blocking state itself; and
//                      Helm's "UPGRADE FAILED: context deadline exceeded" (a --wait timeout:
//                      the release's resources never became ready), before the network rules.
//  4. pod/oom-killed   the kubelet's reason word.
//  5. image/*          only with an image-pull marker in the text (or a registry-only error
//                      code), so that a pull that fails over the network is image/pull-network
//                      and not agent/api-unreachable, and a registry 401 is image/pull-auth and
//                      not fleet/registration-broken. arch-mismatch first: containerd's
//                      "no match for platform in manifest: not found" also says "not found".
//  6. workload/admission-denied, workload/webhook-unavailable, workload/quota-exceeded, pod/config-ref-missing
//                      apiserver admission / kubelet messages; a webhook call that times out
//                      or has a bad certificate is still an admission problem.
//  7. agent/tls        x509/TLS failures (after clock-skew, after pull/webhook contexts).
//  8. agent/rbac-forbidden  the apiserver authorizer's `forbidden: User "..." cannot ...`.
//  9. fleet/registration-broken (credentials)  401s: the agent's token was revoked or replaced.
// 10. api/removed     NoKindMatchError for a group/version of Kubernetes itself (policy/v1beta1,
//                      flowcontrol.apiserver.k8s.io/v1beta3, ...): a Kubernetes upgrade removed
//                      it, and the manifest that uses it must change; Helm's "removed kubernetes
//                      api(s)" sentence. Before the CRD rules, which match the same wrapper.
//     agent/crd-missing  NoKindMatchError, 404 on a resource type, "ensure CRDs are installed".
// 11. agent/api-unreachable  dial/DNS/timeout errors of the Go net stack and 503s.
// 12. fleet/registration-broken (wrappers)  Fleet's registration messages; they wrap one of the
//                      causes above when there is one, so they come after them.
// 13. helm/release-failed  Helm's wrappers (UPGRADE FAILED, failed to create resource, ...);
//                      after the causes they carry.
// 14. agent/config-invalid  parse/validation errors and panics of the agent itself.
// 15. pod/unschedulable-resources, pod/unschedulable-taints  FailedScheduling messages.
//     When one message names both (e.g. "1 node(s) had untolerated taint {node-role.kubernetes.io
//     /control-plane: }, 2 Insufficient cpu"), resources win: the tainted share is usually the
//     control-plane nodes, tainted by design, and the actionable part is the capacity of the
//     workers. A check that wants the dominant reason by node count uses SchedulingReasons.
// 16. suc/plan-stuck  the generic SUC Job failure message, once no specific rule matched.
//
// Sources that could not be pinned to an upstream string are marked "unverified: <why>".

const (
	srcPullKubelet    = "kubernetes/kubernetes pkg/kubelet/images/image_manager.go (event \"Failed to pull image %q: %v\", reasons ErrImagePull/ImagePullBackOff)"
	srcPullContainerd = "containerd/containerd internal/cri/server/images/image_pull.go (\"failed to pull and unpack image %q: %w\") and core/remotes/docker/resolver.go (\"failed to do request: %w\")"
	srcNetGo          = "golang/go src/net, src/syscall/zerrors_linux_amd64.go, src/net/http/transport.go (i/o timeout, no such host, connection refused, TLS handshake timeout, ...)"
	srcForbidden      = "kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go forbiddenMessage (`User %q cannot %s resource %q in API group %q ...`) wrapped by apimachinery pkg/api/errors NewForbidden (`%s %q is forbidden: %v`)"
	srcFleetRegister  = "rancher/fleet v0.16 internal/cmd/agent/register/register.go"
	srcHelmKube       = "helm/helm v3.22 pkg/kube/client.go"
	srcHelmAction     = "helm/helm v3.22 pkg/action"
	srcX509           = "golang/go src/crypto/x509/verify.go"
)

// pullMarkers are substrings that only occur when a text is about pulling an image: the
// kubelet's event and reasons, containerd's CRI and resolver, CRI-O's c/image, and dockerd.
var pullMarkers = []struct{ marker, source string }{
	{"failed to pull", srcPullKubelet + "; " + srcPullContainerd},
	{"errimagepull", srcPullKubelet},
	{"imagepullbackoff", srcPullKubelet},
	{"pulling image", srcPullKubelet + " (\"Back-off pulling image %q\")"},
	{"failed to resolve reference", "containerd/containerd client/pull.go fetch (\"failed to resolve reference %q: %w\")"},
	{"pinging container registry", "containers/image docker/docker_client.go (CRI-O: \"pinging container registry %s: %w\")"},
	{"reading manifest", "containers/image docker/docker_client.go fetchManifest (CRI-O: \"reading manifest %s in %s: %w\")"},
	{"error response from daemon", "moby/moby client (dockerd: \"Error response from daemon: ...\")"},
}

// netRe matches the network failures of the Go net stack, as seen inside pull errors. It is a
// plain alternation of literals, which the matcher evaluates without the regexp engine.
// "dial tcp" (net.OpError) also covers resolver errors the list does not name, such as the cgo
// resolver's EAI_AGAIN ("dial tcp: lookup registry-1.docker.io: Try again").
const netRe = `i/o timeout|no such host|connection refused|connection reset by peer|tls handshake timeout|network is unreachable|no route to host|context deadline exceeded|server misbehaving|client\.timeout exceeded|proxyconnect tcp|x509: |tls: |dial tcp`

// registryBusyRe matches a registry that answers but will not serve now: Docker Hub's pull rate
// limit (HTTP 429, error code TOOMANYREQUESTS) and a registry or proxy in front of it that is
// down (502/503/504). The pull may succeed later, like a network failure.
const registryBusyRe = `toomanyrequests|429 too many requests|502 bad gateway|503 service unavailable|504 gateway timeout`

// rules builds the table. It is called once, by the package-level var table.
func rules() []Rule {
	var rs []Rule
	add := func(r ...Rule) { rs = append(rs, r...) }
	perPullMarker := func(id, re, src string) {
		for _, m := range pullMarkers {
			add(Rule{ID: id, Scopes: Any, All: []string{m.marker}, Regexp: re, Source: src + "; pull marker from " + m.source})
		}
	}

	// ---- 1. system-upgrade-controller -------------------------------------------------------
	add(
		Rule{ID: "suc/job-deadline", Scopes: Any, All: []string{"failed on node", "deadlineexceeded"},
			Regexp: `job \S+/\S+ failed on node \S+: deadlineexceeded`,
			Source: "rancher/system-upgrade-controller pkg/upgrade/handle_batch.go (\"Job %s/%s failed on Node %s: %s: %s\" with the Job's Failed condition reason) + kubernetes/kubernetes pkg/controller/job/job_controller.go (JobReasonDeadlineExceeded)"},
		Rule{ID: "suc/job-deadline", Scopes: Any, All: []string{"job was active longer than specified deadline"},
			Source: "kubernetes/kubernetes pkg/controller/job/job_controller.go (newFailureCondition(batch.JobReasonDeadlineExceeded, \"Job was active longer than specified deadline\"))"},
		Rule{ID: "suc/rbac", Scopes: Any, All: []string{"forbidden", `"pods/eviction"`},
			Regexp: `cannot create resource "pods/eviction"`,
			Source: srcForbidden + " (subresource rendered as resource/subresource: the drain's eviction call)"},
		Rule{ID: "suc/rbac", Scopes: Any, All: []string{"forbidden: user \"system:serviceaccount:", "system-upgrade"},
			Regexp: `forbidden: user "system:serviceaccount:[^"]*system-upgrade[^"]*" cannot `,
			Source: srcForbidden + " (subject is the system-upgrade(-controller) service account: manifests/system-upgrade-controller.yaml in rancher/system-upgrade-controller)"},
		Rule{ID: "suc/plan-stuck", Scopes: Log | Event, All: []string{"cannot evict pod as it would violate the pod's disruption budget"},
			Source: "kubernetes/kubernetes pkg/registry/core/pod/storage/eviction.go (createTooManyRequestsError / checkAndDecrement: \"Cannot evict pod as it would violate the pod's disruption budget.\"), logged by kubectl drain in the SUC drain container"},
	)

	// ---- 2. clock skew ------------------------------------------------------------------------
	add(
		Rule{ID: "cluster/clock-skew", Scopes: Any, All: []string{"certificate has expired or is not yet valid", "is before"},
			Regexp: `current time \S+ is before \S+`,
			Source: srcX509 + " (CertificateInvalidError Expired: \"x509: certificate has expired or is not yet valid: \" + Detail \"current time %s is before %s\" = NotBefore in the local future)"},
		Rule{ID: "cluster/clock-skew", Scopes: Any, All: []string{"token used before issued"},
			Source: "golang-jwt/jwt (dgrijalva/jwt-go) claims.go Valid(): ValidationErrorIssuedAt \"Token used before issued\""},
		Rule{ID: "cluster/clock-skew", Scopes: Any, All: []string{"token not valid yet (nbf)"},
			Source: "go-jose/go-jose jwt/validation.go ErrNotValidYet \"validation failed, token not valid yet (nbf)\" (kube-apiserver service-account/OIDC token validation)"},
		Rule{ID: "cluster/clock-skew", Scopes: Any, All: []string{"token issued in the future (iat)"},
			Source: "go-jose/go-jose jwt/validation.go ErrIssuedInTheFuture \"validation field, token issued in the future (iat)\""},
		Rule{ID: "cluster/clock-skew", Scopes: Any, All: []string{"prober found high clock drift"},
			Source: "etcd-io/etcd server/etcdserver/api/rafthttp/probing_status.go monitorProbingStatus (lg.Warn(\"prober found high clock drift\", ...))"},
		Rule{ID: "cluster/clock-skew", Scopes: Any, All: []string{"the clock difference against peer"},
			Source: "etcd-io/etcd rafthttp/probing_status.go (capnslog: \"the clock difference against peer %s is too high [%v > %v]\")"},
		Rule{ID: "cluster/clock-skew", Scopes: Any, All: []string{"clock skew"},
			Source: "unverified: generic phrase (\"clock skew\") used by many components' messages; no single upstream string"},
	)

	// ---- 3. exact blocking-state sentences -------------------------------------------------------
	add(
		Rule{ID: "helm/release-pending", Scopes: Any, All: []string{"another operation (install/upgrade/rollback) is in progress"},
			Source: srcHelmAction + "/action.go errPending; rancher/fleet v0.16 internal/helmdeployer/deployer.go HelmUpgradeInterruptedError"},
		Rule{ID: "helm/no-deployed-release", Scopes: Any, All: []string{"no deployed releases"},
			Source: "helm/helm v3.22 pkg/storage/driver/driver.go ErrNoDeployedReleases \"has no deployed releases\" (StorageDriverError: \"%q has no deployed releases\")"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"failed: "},
			Regexp: `upgrade failed: context deadline exceeded|installation failed: context deadline exceeded|upgrade failed: timed out waiting for the condition|installation failed: timed out waiting for the condition`,
			Source: "helm/helm v3.22 cmd/helm/upgrade.go / install.go (\"UPGRADE FAILED\" / \"INSTALLATION FAILED\" wrapping the --wait timeout: the release's resources never became ready; not a network problem)"},
		Rule{ID: "fleet/content-missing", Scopes: Any, All: []string{"contents.fleet.cattle.io", "not found"},
			Regexp: `contents\.fleet\.cattle\.io "[^"]*" not found`,
			Source: "kubernetes/apimachinery pkg/api/errors/errors.go NewNotFound (\"%s %q not found\") for the Fleet Content resource (rancher/fleet pkg/apis/fleet.cattle.io/v1alpha1 Content); SPEC §6"},
	)

	// ---- 4. OOM --------------------------------------------------------------------------------
	add(Rule{ID: "pod/oom-killed", Scopes: Any, All: []string{"oomkilled"},
		Source: "kubernetes/kubernetes container status reason \"OOMKilled\" (pkg/kubelet/dockershim/docker_container.go ContainerStatus; containerd CRI sets the same reason for an OOM exit)"})

	// ---- 5. images -----------------------------------------------------------------------------
	add(
		Rule{ID: "image/arch-mismatch", Scopes: Any, All: []string{"exec format error"},
			Source: "golang/go src/syscall/zerrors_linux_amd64.go ENOEXEC \"exec format error\" (runc / the container's exec of a binary built for another architecture)"},
		Rule{ID: "image/arch-mismatch", Scopes: Any, All: []string{"no match for platform in manifest"},
			Source: "containerd/containerd core/images/image.go Manifest() (errors.Wrapf(errdefs.ErrNotFound, \"no match for platform in manifest %v\", image.Digest))"},
		Rule{ID: "image/arch-mismatch", Scopes: Any, All: []string{"does not match the specified platform"},
			Source: "moby/moby daemon/containerd/image.go GetImage / daemon/images/image.go (errdefs.NotFound: \"image with reference %s was found but does not match the specified platform: wanted %s, actual: %s\")"},
		Rule{ID: "image/arch-mismatch", Scopes: Any, All: []string{"no matching manifest for", "in the manifest list entries"},
			Source: "moby/moby distribution/errors.go noMatchesErr (\"no matching manifest for %s in the manifest list entries\")"},
	)
	perPullMarker("image/pull-network", netRe, srcNetGo)
	perPullMarker("image/pull-network", registryBusyRe,
		"distribution/distribution registry/api/errcode ErrorCodeTooManyRequests (\"toomanyrequests\", HTTP 429; Docker Hub: \"toomanyrequests: You have reached your pull rate limit\"); containerd/containerd core/remotes/docker/fetcher.go / errors.go (\"unexpected status code %s: %s\", \"unexpected status from %s request to %s: %s\" with the HTTP status text)")
	add(
		Rule{ID: "image/pull-auth", Scopes: Any, All: []string{"pull access denied"},
			Source: "containerd/containerd core/remotes/docker/resolver.go Resolve (\"pull access denied, repository does not exist or may require authorization: %w\" on ErrInvalidAuthorization); moby/moby (\"pull access denied for %s, repository does not exist or may require 'docker login'\")"},
		Rule{ID: "image/pull-auth", Scopes: Any, All: []string{"insufficient_scope"},
			Source: "distribution/distribution registry/auth token error code insufficient_scope (\"server message: insufficient_scope: authorization failed\" in containerd)"},
		Rule{ID: "image/pull-auth", Scopes: Any, All: []string{"unauthorized: authentication required"},
			Source: "opencontainers/distribution-spec error code UNAUTHORIZED (message \"authentication required\"), distribution/distribution registry/api/errcode ErrorCodeUnauthorized, rendered \"unauthorized: authentication required\""},
		Rule{ID: "image/pull-auth", Scopes: Any, All: []string{"no basic auth credentials"},
			Source: "distribution/distribution registry/client/auth/session.go ErrNoBasicAuthCredentials (\"no basic auth credentials\"), used by dockerd when it has no credentials for the registry"},
		Rule{ID: "image/pull-auth", Scopes: Any, All: []string{"requested access to the resource is denied"},
			Source: "opencontainers/distribution-spec error code DENIED (message \"requested access to the resource is denied\"), distribution/distribution registry/api/errcode ErrorCodeDenied"},
		Rule{ID: "image/pull-auth", Scopes: Any, All: []string{"failed to fetch anonymous token"},
			Source: "containerd/containerd core/remotes/docker/auth/fetch.go (\"failed to fetch anonymous token: %w\"), under \"failed to authorize: %w\" in resolver.go"},
		Rule{ID: "image/pull-auth", Scopes: Any, All: []string{"failed to fetch oauth token"},
			Source: "containerd/containerd core/remotes/docker/auth/fetch.go (\"failed to fetch oauth token: %w\")"},
	)
	perPullMarker("image/pull-auth", `401 unauthorized|403 forbidden|: unauthorized|: denied:|: forbidden`,
		"containerd/containerd core/remotes/errors/errors.go ErrUnexpectedStatus (\"unexpected status from %s request to %s: %s\", e.g. 401 Unauthorized / 403 Forbidden)")
	add(
		Rule{ID: "image/pull-not-found", Scopes: Any, All: []string{"manifest unknown"},
			Source: "distribution/distribution registry/api/v2/errors.go ErrorCodeManifestUnknown (message \"manifest unknown\"); moby/moby (\"manifest for %s not found: manifest unknown\")"},
		Rule{ID: "image/pull-not-found", Scopes: Any, All: []string{"name unknown"},
			Regexp: `\bname unknown\b`,
			Source: "distribution/distribution registry/api/v2/errors.go ErrorCodeNameUnknown (\"name unknown\": repository name not known to registry)"},
	)
	perPullMarker("image/pull-not-found", `: not found|repository does not exist|does not exist or no pull access`,
		"containerd/containerd core/remotes/docker/resolver.go Resolve (\"%s: %w\" with errdefs.ErrNotFound = \"not found\" on HTTP 404)")

	// ---- 6. admission, quota, config references -----------------------------------------------------
	add(
		Rule{ID: "workload/admission-denied", Scopes: Any, All: []string{"admission webhook", "denied the request"},
			Family: webhookFamily,
			Source: "kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go ToStatusErr (\"admission webhook %q denied the request\")"},
		Rule{ID: "workload/webhook-unavailable", Scopes: Any, All: []string{"failed calling webhook"}, Family: webhookFamily,
			Source: "kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/util/webhook/error.go ErrCallingWebhook (\"failed calling webhook %q: %v\"), surfaced as \"Internal error occurred: failed calling webhook ...\""},
		Rule{ID: "workload/admission-denied", Scopes: Any, All: []string{"podsecuritypolicy: unable to admit pod"},
			Source: "kubernetes/kubernetes plugin/pkg/admission/security/podsecuritypolicy/admission.go (v1.x-1.24: admission.NewForbidden(a, fmt.Errorf(\"PodSecurityPolicy: unable to admit pod: %v\", ...)))"},
		Rule{ID: "workload/admission-denied", Scopes: Any, All: []string{"unable to validate against any pod security policy"},
			Source: "kubernetes/kubernetes plugin/pkg/admission/security/podsecuritypolicy/admission.go (up to v1.16: \"unable to validate against any pod security policy: %v\")"},
		Rule{ID: "workload/admission-denied", Scopes: Any, All: []string{"violates podsecurity"},
			Source: "kubernetes/kubernetes staging/src/k8s.io/pod-security-admission/admission/admission.go (\"violates PodSecurity %q: %s\")"},
		Rule{ID: "workload/quota-exceeded", Scopes: Any, All: []string{"exceeded quota:"}, Family: quotaFamily,
			Source: "kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go CheckRequest (\"exceeded quota: %s, requested: %s, used: %s, limited: %s\")"},
		Rule{ID: "workload/quota-exceeded", Scopes: Any, All: []string{"failed quota:"}, Family: quotaFamily,
			Source: "kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go (\"failed quota: %s: %v\", e.g. \"must specify limits.cpu for: <container>\")"},
		Rule{ID: "workload/quota-exceeded", Scopes: Any, All: []string{"must specify"},
			Regexp: `must specify (?:limits|requests)\.(?:cpu|memory|ephemeral-storage)`,
			Source: "kubernetes/kubernetes pkg/quota/v1/evaluator/core/pods.go podComputeUsageHelper/Constraints (\"must specify %s\")"},
		Rule{ID: "pod/config-ref-missing", Scopes: Any, All: []string{"configmap \"", "\" not found"},
			Regexp: `(?:^|[^a-z])configmap "[^"]+" not found`,
			Source: "kubernetes/kubernetes pkg/kubelet/configmap/configmap_manager.go NewWatchingConfigMapManager (NotFound with group resource corev1.Resource(\"configmap\"): `configmap \"x\" not found`, singular — the API server says `configmaps \"x\"`), in CreateContainerConfigError and FailedMount \"MountVolume.SetUp failed for volume ...\""},
		Rule{ID: "pod/config-ref-missing", Scopes: Any, All: []string{"secret \"", "\" not found"},
			Regexp: `(?:^|[^a-z])secret "[^"]+" not found`,
			Source: "kubernetes/kubernetes pkg/kubelet/secret/secret_manager.go NewWatchingSecretManager (NotFound with group resource corev1.Resource(\"secret\"): `secret \"x\" not found`, singular — the API server says `secrets \"x\"`), in CreateContainerConfigError and FailedMount"},
		Rule{ID: "pod/config-ref-missing", Scopes: Any, All: []string{"couldn't find key"},
			Regexp: `couldn't find key \S+ in (?:configmap|secret)`,
			Source: "kubernetes/kubernetes pkg/kubelet/kubelet_pods.go makeEnvironmentVariables (\"couldn't find key %v in ConfigMap %v/%v\", \"couldn't find key %v in Secret %v/%v\")"},
		Rule{ID: "pod/config-ref-missing", Scopes: Any, All: []string{"references non-existent"},
			Regexp: `references non-existent (?:config|secret) key`,
			Source: "kubernetes/kubernetes pkg/volume/configmap/configmap.go (\"configmap references non-existent config key: %s\") and pkg/volume/secret/secret.go (\"references non-existent secret key: %s\")"},
	)

	// ---- 7. TLS --------------------------------------------------------------------------------
	add(
		Rule{ID: "agent/tls", Scopes: Any, All: []string{"x509: certificate signed by unknown authority"},
			Source: srcX509 + " UnknownAuthorityError.Error"},
		Rule{ID: "agent/tls", Scopes: Any, All: []string{"x509: certificate is valid for"},
			Source: srcX509 + " HostnameError.Error (\"x509: certificate is valid for %s, not %s\")"},
		Rule{ID: "agent/tls", Scopes: Any, All: []string{"x509: certificate is not valid for any names"},
			Source: srcX509 + " HostnameError.Error"},
		Rule{ID: "agent/tls", Scopes: Any, All: []string{"x509: cannot validate certificate for"},
			Source: srcX509 + " HostnameError.Error (\"... because it doesn't contain any IP SANs\")"},
		Rule{ID: "agent/tls", Scopes: Any, All: []string{"certificate has expired or is not yet valid"},
			Source: srcX509 + " CertificateInvalidError Expired (\"current time %s is after %s\"; the \"is before\" form is cluster/clock-skew, matched earlier)"},
		Rule{ID: "agent/tls", Scopes: Any, All: []string{"tls: failed to verify certificate"},
			Source: "golang/go src/crypto/tls/common.go CertificateVerificationError.Error (\"tls: failed to verify certificate: %s\")"},
		Rule{ID: "agent/tls", Scopes: Any, All: []string{"remote error: tls:"},
			Regexp: `remote error: tls: (?:bad certificate|unknown certificate authority|certificate required|expired certificate|certificate revoked|unsupported certificate|certificate unknown|unknown certificate)`,
			Source: "golang/go src/crypto/tls/conn.go (net.OpError{Op: \"remote error\", Err: alert}) + alert.go (\"bad certificate\", \"unknown certificate authority\", ...)"},
		Rule{ID: "agent/tls", Scopes: Any, All: []string{"x509: certificate relies on legacy common name field"},
			Source: srcX509 + " HostnameError.Error"},
		Rule{ID: "agent/tls", Scopes: Any, All: []string{"first record does not look like a tls handshake"},
			Source: "golang/go src/crypto/tls/conn.go readRecordOrCCS (https:// URL pointing at a plain-HTTP endpoint)"},
		Rule{ID: "agent/tls", Scopes: Any, All: []string{"x509: "},
			Source: srcX509 + " (any other x509 verification error)"},
	)

	// ---- 8. RBAC -------------------------------------------------------------------------------
	add(
		Rule{ID: "agent/rbac-forbidden", Scopes: Any, All: []string{"forbidden: user \""},
			Regexp: `forbidden: user "[^"]*" cannot `,
			Source: srcForbidden},
		Rule{ID: "agent/rbac-forbidden", Scopes: Any, All: []string{"is attempting to grant rbac permissions not currently held"},
			Source: "kubernetes/kubernetes pkg/registry/rbac/validation/rule.go ConfirmNoEscalation (\"user %q (groups=%q) is attempting to grant RBAC permissions not currently held\"): the agent's service account cannot install RBAC it does not hold"},
	)

	// ---- 9. registration: the agent's credentials are refused ----------------------------------------
	add(
		Rule{ID: "fleet/registration-broken", Scopes: Any, All: []string{"the server has asked for the client to provide credentials"},
			Source: "kubernetes/apimachinery pkg/api/errors/errors.go NewGenericServerResponse (HTTP 401 without a body)"},
		Rule{ID: "fleet/registration-broken", Scopes: Any, All: []string{"unauthorized"},
			Regexp: `\bunauthorized\b`,
			Source: "kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/filters/authentication.go Unauthorized (apierrors.NewUnauthorized(\"Unauthorized\")), seen by client-go as \"Unauthorized\": the agent's token was revoked or belongs to a deleted registration"},
		Rule{ID: "fleet/registration-broken", Scopes: Any, All: []string{"non-matching clientid on cluster"},
			Source: "rancher/fleet v0.16 internal/cmd/controller/agentmanagement/controllers/clusterregistration/controller.go (\"non-matching ClientID on cluster %s/%s got %s expected %s\")"},
		Rule{ID: "fleet/registration-broken", Scopes: Any, All: []string{"failed to authorize cluster, cannot get service account token"},
			Source: "rancher/fleet v0.16 internal/cmd/controller/agentmanagement/controllers/clusterregistration/controller.go"},
	)

	// ---- 10a. built-in APIs a Kubernetes upgrade removed: the bundle's content, not a CRD -------
	add(
		Rule{ID: "api/removed", Scopes: Any, All: []string{"no matches for kind"},
			Family: removedAPIFamily,
			Source: "kubernetes/apimachinery pkg/api/meta/errors.go NoKindMatchError.Error (\"no matches for kind %q in version %q\") for a group/version of k8s.io/api, relayed by helm pkg/kube (\"resource mapping not found for name ... ensure CRDs are installed first\") and \"unable to build kubernetes objects from current release manifest\""},
		Rule{ID: "api/removed", Scopes: Any, All: []string{"current release manifest contains removed kubernetes api(s)"},
			Source: srcHelmAction + "/upgrade.go performUpgrade (\"current release manifest contains removed kubernetes api(s) for this kubernetes version and it is therefore unable to build the kubernetes objects for performing the diff. error from kubernetes: %s\")"},
	)

	// ---- 10. CRDs ------------------------------------------------------------------------------
	add(
		Rule{ID: "agent/crd-missing", Scopes: Any, All: []string{"no matches for kind"},
			Family: missingKindFamily,
			Source: "kubernetes/apimachinery pkg/api/meta/errors.go NoKindMatchError.Error (\"no matches for kind %q in version %q\" / \"in versions %q\" / \"in group %q\")"},
		Rule{ID: "agent/crd-missing", Scopes: Any, All: []string{"ensure crds are installed first"},
			Source: "kubernetes/cli-runtime pkg/resource/mapper.go infoForData (\"resource mapping not found for name: %q namespace: %q from %q: %w\\nensure CRDs are installed first\"), seen through Helm"},
		Rule{ID: "agent/crd-missing", Scopes: Any, All: []string{"could not find the requested resource"},
			Source: "kubernetes/apimachinery pkg/api/errors/errors.go NewGenericServerResponse (HTTP 404: \"the server could not find the requested resource\" + \" (get bundledeployments.fleet.cattle.io)\"), from client-go reflector \"failed to list %v: %w\""},
		Rule{ID: "agent/crd-missing", Scopes: Any, All: []string{"if kind is a crd, it should be installed before calling start"},
			Source: "kubernetes-sigs/controller-runtime pkg/internal/source/kind.go Start (logged on meta.NoKindMatchError)"},
		Rule{ID: "agent/crd-missing", Scopes: Any, All: []string{"the server doesn't have a resource type"},
			Source: "kubernetes/kubectl pkg/cmd/util/helpers.go checkErr (meta.NoResourceMatchError: \"the server doesn't have a resource type %q\")"},
	)

	// ---- 11. API server unreachable ------------------------------------------------------------------
	for _, s := range []string{"connection refused", "i/o timeout", "no such host", "context deadline exceeded",
		"connection reset by peer", "client.timeout exceeded", "tls handshake timeout", "no route to host",
		"network is unreachable", "server misbehaving", "http2: client connection lost"} {
		add(Rule{ID: "agent/api-unreachable", Scopes: Any, All: []string{s}, Source: srcNetGo + "; golang/go src/context (\"context deadline exceeded\"), src/net/http/client.go (\"(Client.Timeout exceeded while awaiting headers)\"), src/net/http/h2_bundle.go (\"http2: client connection lost\")"})
	}
	add(
		Rule{ID: "agent/api-unreachable", Scopes: Any, All: []string{"the server is currently unable to handle the request"},
			Source: "kubernetes/apimachinery pkg/api/errors/errors.go NewGenericServerResponse (HTTP 503)"},
		Rule{ID: "agent/api-unreachable", Scopes: Any, All: []string{"the server was unable to return a response in the time allotted"},
			Source: "kubernetes/apimachinery pkg/api/errors/errors.go NewGenericServerResponse (HTTP 504)"},
	)

	// ---- 12. Fleet registration wrappers --------------------------------------------------------------
	add(
		// The agent's configuration is a cause the registration wrappers below carry: registration
		// reads the fleet-agent ConfigMap first, and a value it cannot decode fails it.
		Rule{ID: "agent/config-invalid", Scopes: Any, All: []string{"failed to look up client config", "unmarshal"},
			Source: srcFleetRegister + " runRegistration (\"failed to look up client config %s/%s: %w\") wrapping rancher/fleet internal/config ReadConfig (sigs.k8s.io/yaml Unmarshal: \"error unmarshaling JSON: ...\"), logged as \"Failed to register agent: registration failed: ...\""},
		Rule{ID: "fleet/registration-broken", Scopes: Any, All: []string{"timeout waiting for registration secret"},
			Source: srcFleetRegister + " runRegistration (\"timeout waiting for registration secret '%s/%s' on management cluster\")"},
		Rule{ID: "fleet/registration-broken", Scopes: Log, All: []string{"waiting for secret", "on management cluster for request"},
			Source: srcFleetRegister + " runRegistration (logrus.Infof \"Waiting for secret '%s/%s' on management cluster for request '%s/%s': %v\": the ClusterRegistration is not granted yet)"},
		Rule{ID: "fleet/registration-broken", Scopes: Any, All: []string{"new client config cannot list bundledeployments on management cluster"},
			Source: srcFleetRegister + " runRegistration"},
		Rule{ID: "fleet/registration-broken", Scopes: Any, All: []string{"cannot create clusterregistration on management cluster"},
			Source: srcFleetRegister + " runRegistration (\"cannot create clusterregistration on management cluster for cluster id '%s': %w\")"},
		Rule{ID: "fleet/registration-broken", Scopes: Any, All: []string{"looking up secret", "fleet-agent-bootstrap"},
			Source: srcFleetRegister + " runRegistration (\"looking up secret %s/%s: %w\" for config.AgentBootstrapConfigName = \"fleet-agent-bootstrap\")"},
		Rule{ID: "fleet/registration-broken", Scopes: Any, All: []string{"current credential failed, falling back to reregistering"},
			Source: srcFleetRegister + " tryRegister (logrus.Errorf)"},
		Rule{ID: "fleet/registration-broken", Scopes: Any, All: []string{"failed to create 'fleet-agent' secret"},
			Source: srcFleetRegister + " runRegistration"},
		Rule{ID: "fleet/registration-broken", Scopes: Any, All: []string{"failed to register agent"},
			Source: srcFleetRegister + " Register (logrus.Errorf \"Failed to register agent: %v\")"},
		Rule{ID: "fleet/registration-broken", Scopes: Any, All: []string{"registration failed"},
			Source: srcFleetRegister + " tryRegister (\"registration failed: %w\", \"re-registration failed: %w\")"},
		Rule{ID: "fleet/registration-broken", Scopes: Any, All: []string{"failed to register with upstream cluster"},
			Source: "rancher/fleet v0.16 internal/cmd/agent/register.go (\"failed to register with upstream cluster: %w\")"},
	)

	// ---- 13. Helm wrappers ---------------------------------------------------------------------
	add(
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"upgrade failed"},
			Source: "helm/helm v3.22 cmd/helm/upgrade.go (errors.Wrap(err, \"UPGRADE FAILED\"))"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"installation failed"},
			Source: "helm/helm v3.22 cmd/helm/install.go (errors.Wrap(err, \"INSTALLATION FAILED\"))"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"\" failed: "},
			Regexp: `\b(?:upgrade|release|rollback) "[^"]*" failed: `,
			Source: srcHelmAction + " upgrade.go failRelease (\"Upgrade %q failed: %s\"), install.go/rollback.go (\"Release %q failed: %s\", \"Rollback %q failed: %s\")"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"failed to replace object"},
			Source: srcHelmKube + " replaceResource (errors.Wrap(err, \"failed to replace object\"))"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"failed to create resource"},
			Source: srcHelmKube + " Create (errors.Wrap(err, \"failed to create resource\"))"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"cannot patch"},
			Regexp: `cannot patch "[^"]*" with kind`,
			Source: srcHelmKube + " updateResource (\"cannot patch %q with kind %s\")"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"rendered manifests contain a resource that already exists"},
			Source: "helm/helm v3.2–v3.1x pkg/action/install.go (\"rendered manifests contain a resource that already exists. Unable to continue with install\")"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"exists and cannot be imported into the current release"},
			Source: srcHelmAction + "/validate.go existingResourceConflict (\"%s exists and cannot be imported into the current release: %s\")"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"invalid ownership metadata"},
			Source: srcHelmAction + "/validate.go checkOwnership"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"unable to continue with"},
			Source: srcHelmAction + " install.go/upgrade.go (\"Unable to continue with install\" / \"Unable to continue with update\")"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"unable to build kubernetes objects from"},
			Source: srcHelmAction + " install.go/upgrade.go/rollback.go (\"unable to build kubernetes objects from release manifest\", \"... from current/new release manifest\")"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"hooks failed"},
			Source: srcHelmAction + "/upgrade.go (\"pre-upgrade hooks failed: %s\", \"post-upgrade hooks failed: %s\")"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"-install: "},
			Regexp: `failed (?:pre|post)-install: `,
			Source: srcHelmAction + "/install.go (\"failed pre-install: %s\", \"failed post-install: %s\")"},
		Rule{ID: "helm/release-failed", Scopes: Any, All: []string{"cannot re-use a name that is still in use"},
			Source: srcHelmAction + "/install.go availableName"},
	)

	// ---- 14. agent configuration the new agent cannot use --------------------------------------------
	add(
		Rule{ID: "agent/config-invalid", Scopes: Any, All: []string{"failed to parse config from configmap"},
			Source: "rancher/fleet v0.16 internal/cmd/agent/operator.go (\"failed to parse config from ConfigMap: %w\")"},
		Rule{ID: "agent/config-invalid", Scopes: Any, All: []string{"failed to look up client config"},
			Source: "rancher/fleet v0.16 internal/cmd/agent/operator.go and register/register.go (\"failed to look up client config %s/%s: %w\": the fleet-agent ConfigMap)"},
		Rule{ID: "agent/config-invalid", Scopes: Any, All: []string{"incompatible metadata version"},
			Source: "unverified: quoted by the field reports in shared/seeds (002); not found in rancher/fleet v0.16 or helm v3.22 sources"},
		Rule{ID: "agent/config-invalid", Scopes: Any, All: []string{"json: unknown field"},
			Source: "golang/go src/encoding/json/decode.go (DisallowUnknownFields: \"json: unknown field %q\"), via sigs.k8s.io/yaml UnmarshalStrict"},
		Rule{ID: "agent/config-invalid", Scopes: Any, All: []string{"cannot unmarshal"},
			Source: "golang/go src/encoding/json/decode.go UnmarshalTypeError (\"json: cannot unmarshal %s into Go struct field %s.%s of type %s\")"},
		Rule{ID: "agent/config-invalid", Scopes: Any, All: []string{"failed to unmarshal"},
			Source: "rancher/fleet v0.16 internal/cmd/agent/deployer/desiredset/diff.go (\"failed to unmarshal patch for %s/%s ...\"); the field reports' \"failed to unmarshal cluster metadata\""},
		Rule{ID: "agent/config-invalid", Scopes: Any, All: []string{"error unmarshaling json"},
			Source: "sigs.k8s.io/yaml yaml.go (\"error unmarshaling JSON: %w\")"},
		Rule{ID: "agent/config-invalid", Scopes: Any, All: []string{"yaml: unmarshal errors"},
			Source: "go-yaml (go.yaml.in/yaml/v2) decode.go TypeError (\"yaml: unmarshal errors:\\n  ...\")"},
		Rule{ID: "agent/config-invalid", Scopes: Any, All: []string{"invalid value"},
			Regexp: `\binvalid value\b`,
			Source: "kubernetes/apimachinery pkg/util/validation/field/errors.go ErrorTypeInvalid (\"Invalid value\")"},
		Rule{ID: "agent/config-invalid", Scopes: Any, All: []string{"is required to be set"},
			Source: "rancher/fleet v0.16 internal/cmd/agent/root.go (\"--namespace or env NAMESPACE is required to be set\")"},
		Rule{ID: "agent/config-invalid", Scopes: Any, All: []string{"env"},
			Regexp: `\benv(?:ironment)?(?: var(?:iable)?)? \S+ (?:is )?(?:not set|must be set|is required)\b`,
			Source: "unverified: generic phrasing of missing environment variables (\"environment variable X not set\" / \"must be set\"); no single upstream string"},
		Rule{ID: "agent/config-invalid", Scopes: Any, All: []string{"invalid memory address or nil pointer dereference"},
			Source: "golang/go src/runtime/panic.go memoryError"},
		Rule{ID: "agent/config-invalid", Scopes: Log, All: []string{"panic: "},
			Regexp: `(?:^|\s)panic: `,
			Source: "golang/go src/runtime/panic.go printpanics (print(\"panic: \"))"},
	)

	// ---- 15. scheduling ------------------------------------------------------------------------
	add(
		Rule{ID: "pod/unschedulable-resources", Scopes: Any, All: []string{"insufficient "},
			Regexp: `\b\d+ insufficient [a-z0-9][a-z0-9./_-]*|\binsufficient (?:cpu|memory|ephemeral-storage|pods|hugepages-\S+)\b`,
			Source: "kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest (Reason: fmt.Sprintf(\"Insufficient %v\", rName)), counted by FitError.Error (\"0/%v nodes are available: %v.\")"},
		Rule{ID: "pod/unschedulable-resources", Scopes: Any, All: []string{"too many pods"},
			Source: "kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest (Reason: \"Too many pods\")"},
		Rule{ID: "pod/unschedulable-resources", Scopes: Any, All: []string{"didn't have free ports"},
			Source: "kubernetes/kubernetes pkg/scheduler/framework/plugins/nodeports/node_ports.go ErrReason (\"node(s) didn't have free ports for the requested pod ports\")"},
		Rule{ID: "pod/unschedulable-resources", Scopes: Any, All: []string{"node didn't have enough resource"},
			Source: "kubernetes/kubernetes pkg/kubelet/lifecycle/predicate.go InsufficientResourceError (\"Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d\", pod reason OutOf<resource>)"},
		Rule{ID: "pod/unschedulable-taints", Scopes: Any, All: []string{"untolerated taint"},
			Source: "kubernetes/kubernetes pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go Filter (\"node(s) had untolerated taint {%s: %s}\", v1.25+; newer \"node(s) had untolerated taint(s)\")"},
		Rule{ID: "pod/unschedulable-taints", Scopes: Any, All: []string{"that the pod didn't tolerate"},
			Regexp: `had taints? .*that the pod didn't tolerate`,
			Source: "kubernetes/kubernetes pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go (v1.19–1.24: \"node(s) had taint {%s: %s}, that the pod didn't tolerate\"; older ErrReasonNotMatch \"node(s) had taints that the pod didn't tolerate\")"},
		Rule{ID: "pod/unschedulable-taints", Scopes: Any, All: []string{"node(s) were unschedulable"},
			Source: "kubernetes/kubernetes pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go ErrReasonUnschedulable (cordoned nodes: the node.kubernetes.io/unschedulable taint)"},
	)

	// ---- 16. SUC generic Job failure -----------------------------------------------------------
	add(Rule{ID: "suc/plan-stuck", Scopes: Any, All: []string{"failed on node"},
		Regexp: `job \S+/\S+ failed on node \S+: `,
		Source: "rancher/system-upgrade-controller pkg/upgrade/handle_batch.go (\"Job %s/%s failed on Node %s: %s: %s\", PlanComplete.SetError(plan, \"JobFailed\", ...))"})

	return rs
}
