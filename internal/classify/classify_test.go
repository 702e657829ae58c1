package classify

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// knownIDs are the catalogue IDs this package may return (SPEC §3).
var knownIDs = map[string]bool{
	"helm/release-pending": true, "helm/no-deployed-release": true, "helm/release-failed": true,
	"fleet/content-missing": true, "fleet/registration-broken": true,
	"agent/crd-missing": true, "agent/config-invalid": true, "agent/tls": true, "api/removed": true,
	"agent/rbac-forbidden": true, "agent/api-unreachable": true,
	"cluster/clock-skew":   true,
	"image/pull-not-found": true, "image/pull-auth": true, "image/pull-network": true, "image/arch-mismatch": true,
	"pod/unschedulable-taints": true, "pod/unschedulable-resources": true, "pod/config-ref-missing": true,
	"pod/oom-killed":            true,
	"workload/admission-denied": true, "workload/webhook-unavailable": true, "workload/quota-exceeded": true,
	"suc/rbac": true, "suc/job-deadline": true, "suc/plan-stuck": true,
}

type tc struct {
	name  string
	scope Scope
	text  string
	want  string
}

// positives are real-shaped lines: klog/logrus/controller-runtime log lines, kubelet and
// controller event messages, and status/condition messages.
var positives = []tc{
	// ---- helm/release-pending
	{"fleet agent reconciler error (controller-runtime console)", Log,
		`2024-11-29T07:58:02Z	ERROR	Reconciler error	{"controller": "bundledeployment", "controllerGroup": "fleet.cattle.io", "controllerKind": "BundleDeployment", "BundleDeployment": {"name":"fleet-agent-c-m-7x9k2p4q","namespace":"cluster-fleet-default-c-m-7x9k2p4q-8f3a6c1e2b4d"}, "namespace": "cluster-fleet-default-c-m-7x9k2p4q-8f3a6c1e2b4d", "name": "fleet-agent-c-m-7x9k2p4q", "reconcileID": "3f0e9a8c-2d1b-4f6e-9a7c-5b8d0e1f2a3c", "error": "failed deploying bundle: another operation (install/upgrade/rollback) is in progress"}`,
		"helm/release-pending"},
	{"BundleDeployment Deployed condition", Status,
		`another operation (install/upgrade/rollback) is in progress`, "helm/release-pending"},
	{"helm CLI", Log,
		`Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress`, "helm/release-pending"},

	// ---- helm/no-deployed-release
	{"BD condition", Status,
		`failed deploying bundle: "fleet-agent-c-m-7x9k2p4q" has no deployed releases`, "helm/no-deployed-release"},
	{"helm CLI wrapper loses to the cause", Log,
		`Error: UPGRADE FAILED: "fleet-agent" has no deployed releases`, "helm/no-deployed-release"},

	// ---- helm/release-failed
	{"replace object with Invalid value inside", Status,
		`Error: UPGRADE FAILED: failed to replace object: Service "fleet-agent" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.43.12.7"}: may not change once set`,
		"helm/release-failed"},
	{"ownership conflict with must be set inside", Status,
		`Error: INSTALLATION FAILED: rendered manifests contain a resource that already exists. Unable to continue with install: ServiceAccount "fleet-agent" in namespace "cattle-fleet-system" exists and cannot be imported into the current release: invalid ownership metadata; label validation error: missing key "app.kubernetes.io/managed-by": must be set to "Helm"; annotation validation error: missing key "meta.helm.sh/release-name": must be set to "fleet-agent-local"`,
		"helm/release-failed"},
	{"helm 3.22 import conflict", Status,
		`Unable to continue with update: ConfigMap "fleet-agent" in namespace "cattle-fleet-system" exists and cannot be imported into the current release: invalid ownership metadata; annotation validation error: key "meta.helm.sh/release-name" must equal "fleet-agent-c-m-7x9k2p4q": current value is "fleet-agent"`,
		"helm/release-failed"},
	{"wait timeout is not a network problem", Log,
		`Error: UPGRADE FAILED: context deadline exceeded`, "helm/release-failed"},
	{"cannot patch", Status,
		`cannot patch "fleet-agent" with kind Deployment: Deployment.apps "fleet-agent" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"fleet-agent"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable`,
		"helm/release-failed"},
	{"hooks", Status, `pre-upgrade hooks failed: 1 error occurred:\n\t* job failed: BackoffLimitExceeded`, "helm/release-failed"},

	// ---- fleet/content-missing
	{"BD status", Status,
		`contents.fleet.cattle.io "s-5f2c8e1d9b7a4c3e6f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d" not found`, "fleet/content-missing"},
	{"klog escaped quotes", Log,
		`E1129 08:01:13.402113       1 controller.go:316] "Reconciler error" err="contents.fleet.cattle.io \"s-5f2c8e1d9b7a4c3e6f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d\" not found" controller="bundledeployment" controllerGroup="fleet.cattle.io" controllerKind="BundleDeployment"`,
		"fleet/content-missing"},

	// ---- agent/crd-missing
	{"client-go reflector 404 (klog structured)", Log,
		`E1129 07:58:02.123456       1 reflector.go:166] "Unhandled Error" err="pkg/mod/k8s.io/client-go@v0.31.1/tools/cache/reflector.go:243: Failed to watch *v1alpha1.BundleDeployment: failed to list *v1alpha1.BundleDeployment: the server could not find the requested resource (get bundledeployments.fleet.cattle.io)" logger="UnhandledError"`,
		"agent/crd-missing"},
	{"client-go reflector 404 (old klog)", Log,
		`E0612 03:11:45.918273       1 reflector.go:153] pkg/mod/k8s.io/client-go@v0.24.4/tools/cache/reflector.go:153: Failed to list *v1alpha1.Bundle: the server could not find the requested resource (get bundles.fleet.cattle.io)`,
		"agent/crd-missing"},
	{"controller-runtime NoKindMatch (json)", Log,
		`{"level":"error","ts":"2024-11-29T07:58:02Z","logger":"controller-runtime.source.EventHandler","msg":"if kind is a CRD, it should be installed before calling Start","kind":"BundleDeployment.fleet.cattle.io","error":"no matches for kind \"BundleDeployment\" in version \"fleet.cattle.io/v1alpha1\""}`,
		"agent/crd-missing"},
	{"helm mapping error beats UPGRADE FAILED", Status,
		"Error: UPGRADE FAILED: unable to build kubernetes objects from new release manifest: resource mapping not found for name: \"fleet-agent\" namespace: \"cattle-fleet-system\" from \"\": no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\"\nensure CRDs are installed first",
		"agent/crd-missing"},

	// ---- workload/admission-denied: PodSecurityPolicy, whose reasons say "Invalid value"
	{"PSP refuses an SUC Job's pod", Event,
		`Error creating: pods "apply-system-agent-upgrader-on-rke-dev-wkr-08-with-61f21c-6b500-" is forbidden: PodSecurityPolicy: unable to admit pod: [spec.securityContext.hostNetwork: Invalid value: true: Host network is not allowed to be used spec.securityContext.hostPID: Invalid value: true: Host PID is not allowed to be used]`,
		"workload/admission-denied"},
	{"old PSP admission", Event,
		`Error creating: pods "test-85d54fb5fc-" is forbidden: unable to validate against any pod security policy: []`,
		"workload/admission-denied"},

	// ---- api/removed: the same wrappers around a group/version of Kubernetes itself
	{"Fleet BD: FlowSchema v1beta3 after 1.32", Status,
		"error validating \"\": error validating data: unable to build kubernetes objects from current release manifest: resource mapping not found for name: \"rancher-flowschema\" namespace: \"\" from \"\": no matches for kind \"FlowSchema\" in version \"flowcontrol.apiserver.k8s.io/v1beta3\"\nensure CRDs are installed first",
		"api/removed"},
	{"helm upgrade: removed kubernetes api(s)", Status,
		`Error: UPGRADE FAILED: current release manifest contains removed kubernetes api(s) for this kubernetes version and it is therefore unable to build the kubernetes objects for performing the diff. error from kubernetes: unable to recognize "": no matches for kind "PodSecurityPolicy" in version "policy/v1beta1"`,
		"api/removed"},
	{"core group version (no slash)", Status,
		`unable to build kubernetes objects from current release manifest: resource mapping not found for name: "x" namespace: "" from "": no matches for kind "Binding" in version "v1beta1"`,
		"api/removed"},
	{"agent log relaying it (klog escaped)", Log,
		`E1201 10:02:11.000000       1 controller.go:316] "Reconciler error" err="failed deploying bundle: unable to build kubernetes objects from current release manifest: resource mapping not found for name: \"psp\" namespace: \"\" from \"\": no matches for kind \"PodSecurityPolicy\" in version \"policy/v1beta1\"\nensure CRDs are installed first"`,
		"api/removed"},
	{"look-alike: CRD group ending in .k8s.io stays a CRD", Status,
		`resource mapping not found for name: "daily" namespace: "" from "": no matches for kind "VolumeSnapshotClass" in version "snapshot.storage.k8s.io/v1beta1"` + "\nensure CRDs are installed first",
		"agent/crd-missing"},
	{"look-alike: gateway API CRD", Status,
		`no matches for kind "HTTPRoute" in version "gateway.networking.k8s.io/v1"`,
		"agent/crd-missing"},

	// ---- agent/config-invalid
	{"seed metadata unmarshal", Log,
		`time="2025-06-03T02:14:09Z" level=fatal msg="failed to unmarshal cluster metadata: json: cannot unmarshal string into Go struct field ClusterSpec.rkeConfig of type v1.RKEConfig"`,
		"agent/config-invalid"},
	{"go panic", Log, `panic: runtime error: invalid memory address or nil pointer dereference`, "agent/config-invalid"},
	{"go panic header", Log, `panic: assignment to entry in nil map`, "agent/config-invalid"},
	{"fleet env", Log, `Error: --namespace or env NAMESPACE is required to be set`, "agent/config-invalid"},
	{"agent config inside the registration wrapper", Log,
		`time="2026-11-28T09:02:11Z" level=error msg="Failed to register agent: registration failed: failed to look up client config cattle-fleet-system/fleet-agent: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal number into Go struct field Config.clientID of type string"`,
		"agent/config-invalid"},
	{"agent config lookup that failed on the network stays a network problem", Log,
		`time="2026-11-28T09:02:11Z" level=error msg="Failed to register agent: registration failed: failed to look up client config cattle-fleet-system/fleet-agent: Get \"https://10.43.0.1:443/api/v1/namespaces/cattle-fleet-system/configmaps/fleet-agent\": dial tcp 10.43.0.1:443: connect: connection refused"`,
		"agent/api-unreachable"},
	{"strict yaml", Log,
		`{"level":"error","ts":"2024-11-29T08:00:01Z","logger":"setup","msg":"failed to get agent config","error":"failed to parse config from ConfigMap: error unmarshaling JSON: while decoding JSON: json: unknown field \"agentTLSMode\""}`,
		"agent/config-invalid"},
	{"validation", Status, `spec.clusterNetwork.plugin: Invalid value: "cilium": unsupported value`, "agent/config-invalid"},
	{"metadata version (seed)", Log, `level=error msg="incompatible metadata version 3, expected 2"`, "agent/config-invalid"},
	{"environment variable", Log, `level=fatal msg="environment variable CATTLE_SERVER not set"`, "agent/config-invalid"},

	// ---- agent/tls
	{"registration wrapper carries TLS cause", Log,
		`time="2024-11-29T08:12:01Z" level=error msg="Failed to register agent: registration failed: cannot create clusterregistration on management cluster for cluster id 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d': Post \"https://rancher.example.com/apis/fleet.cattle.io/v1alpha1/namespaces/fleet-default/clusterregistrations\": tls: failed to verify certificate: x509: certificate signed by unknown authority"`,
		"agent/tls"},
	{"hostname", Log,
		`E1129 08:12:01.000001       1 reflector.go:158] "Unhandled Error" err="failed to list *v1alpha1.BundleDeployment: Get \"https://rancher.example.com/apis/fleet.cattle.io/v1alpha1/bundledeployments\": tls: failed to verify certificate: x509: certificate is valid for ingress.local, not rancher.example.com"`,
		"agent/tls"},
	{"expired cert (is after)", Log,
		`Get "https://rancher.example.com/healthz": tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2025-03-02T10:00:00Z is after 2025-02-28T23:59:59Z`,
		"agent/tls"},
	{"server side", Log, `2024/11/29 08:12:01 http: TLS handshake error from 10.42.0.15:48862: remote error: tls: bad certificate`, "agent/tls"},

	// ---- cluster/clock-skew
	{"not yet valid (is before) beats agent/tls", Log,
		`E1129 07:58:02.123456       1 reflector.go:158] "Unhandled Error" err="failed to list *v1alpha1.BundleDeployment: Get \"https://rancher.example.com/apis/fleet.cattle.io/v1alpha1/namespaces/cluster-fleet-default-c-m-7x9k2p4q-8f3a6c1e2b4d/bundledeployments?limit=500&resourceVersion=0\": tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2024-11-29T07:58:02Z is before 2024-11-29T08:14:37Z"`,
		"cluster/clock-skew"},
	{"jwt nbf", Log,
		`E1129 07:58:02.500000       1 authentication.go:73] "Unable to authenticate the request" err="[invalid bearer token, square/go-jose/jwt: validation failed, token not valid yet (nbf)]"`,
		"cluster/clock-skew"},
	{"jwt iat", Log, `level=error msg="token used before issued"`, "cluster/clock-skew"},
	{"etcd zap", Log, `{"level":"warn","ts":"2024-12-28T08:48:44.522403Z","caller":"rafthttp/probing_status.go:82","msg":"prober found high clock drift","round-tripper-name":"ROUND_TRIPPER_RAFT_MESSAGE","remote-peer-id":"4df3de4b88bd271","clock-drift":"1.123978766s","rtt":"15.900899ms"}`, "cluster/clock-skew"},

	// ---- agent/rbac-forbidden
	{"list bundledeployments forbidden", Log,
		`E1129 07:58:02.123456       1 reflector.go:158] "Unhandled Error" err="k8s.io/client-go@v0.31.1/tools/cache/reflector.go:243: Failed to watch *v1alpha1.BundleDeployment: failed to list *v1alpha1.BundleDeployment: bundledeployments.fleet.cattle.io is forbidden: User \"system:serviceaccount:cattle-fleet-system:fleet-agent\" cannot list resource \"bundledeployments\" in API group \"fleet.cattle.io\" in the namespace \"cluster-fleet-default-c-m-7x9k2p4q-8f3a6c1e2b4d\"" logger="UnhandledError"`,
		"agent/rbac-forbidden"},
	{"escalation", Status,
		`clusterroles.rbac.authorization.k8s.io "fleet-agent-c-m-7x9k2p4q-edit" is forbidden: user "system:serviceaccount:cattle-fleet-system:fleet-agent" (groups=["system:serviceaccounts" "system:serviceaccounts:cattle-fleet-system" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:`,
		"agent/rbac-forbidden"},

	// ---- fleet/registration-broken
	{"401 from client-go", Log,
		`E1129 07:58:02.123456       1 reflector.go:158] "Unhandled Error" err="k8s.io/client-go@v0.31.1/tools/cache/reflector.go:243: Failed to watch *v1alpha1.BundleDeployment: failed to list *v1alpha1.BundleDeployment: Unauthorized" logger="UnhandledError"`,
		"fleet/registration-broken"},
	{"401 without body", Log,
		`failed to list *v1alpha1.BundleDeployment: the server has asked for the client to provide credentials (get bundledeployments.fleet.cattle.io)`,
		"fleet/registration-broken"},
	{"registration not granted", Log,
		`time="2024-11-29T08:20:00Z" level=info msg="Waiting for secret 'cattle-fleet-clusters-system/c-4b1e0c2f9d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c' on management cluster for request 'fleet-default/request-x7k2p': secrets \"c-4b1e0c2f9d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c\" not found"`,
		"fleet/registration-broken"},
	{"bootstrap secret gone", Log,
		`time="2024-11-29T08:20:00Z" level=error msg="Failed to register agent: registration failed: looking up secret cattle-fleet-system/fleet-agent-bootstrap: secrets \"fleet-agent-bootstrap\" not found"`,
		"fleet/registration-broken"},
	{"client id mismatch (controller)", Log,
		`time="2024-11-29T08:20:00Z" level=error msg="error syncing 'fleet-default/request-x7k2p': handler fleet-cluster-registration: non-matching ClientID on cluster fleet-default/edge-042 got 9f8e7d6c expected 1a2b3c4d, requeuing"`,
		"fleet/registration-broken"},

	// ---- agent/api-unreachable
	{"registration wrapper carries network cause", Log,
		`time="2024-11-29T08:12:01Z" level=error msg="Failed to register agent: registration failed: cannot create clusterregistration on management cluster for cluster id 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d': Post \"https://rancher.example.com/apis/fleet.cattle.io/v1alpha1/namespaces/fleet-default/clusterregistrations\": dial tcp 203.0.113.10:443: connect: connection refused"`,
		"agent/api-unreachable"},
	{"dns", Log,
		`E1129 07:58:02.123456       1 reflector.go:158] "Unhandled Error" err="failed to list *v1alpha1.BundleDeployment: Get \"https://rancher.example.com/apis/fleet.cattle.io/v1alpha1/namespaces/cluster-fleet-default-c-m-7x9k2p4q-8f3a6c1e2b4d/bundledeployments?limit=500&resourceVersion=0\": dial tcp: lookup rancher.example.com on 10.43.0.10:53: no such host"`,
		"agent/api-unreachable"},
	{"handshake timeout", Log, `Get "https://10.43.0.1:443/api?timeout=32s": net/http: TLS handshake timeout`, "agent/api-unreachable"},
	{"503", Log, `failed to list *v1alpha1.BundleDeployment: the server is currently unable to handle the request (get bundledeployments.fleet.cattle.io)`, "agent/api-unreachable"},
	{"client timeout", Log, `Get "https://rancher.example.com/ping": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, "agent/api-unreachable"},

	// ---- image/pull-not-found
	{"containerd 404", Event,
		`Failed to pull image "docker.io/rancher/kubectl:v1.29.9": rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/rancher/kubectl:v1.29.9": failed to resolve reference "docker.io/rancher/kubectl:v1.29.9": docker.io/rancher/kubectl:v1.29.9: not found`,
		"image/pull-not-found"},
	{"newer kubelet, no rpc prefix", Event,
		`Failed to pull image "registry.internal/base/kubectl:v1.29.9": failed to pull and unpack image "registry.internal/base/kubectl:v1.29.9": failed to resolve reference "registry.internal/base/kubectl:v1.29.9": registry.internal/base/kubectl:v1.29.9: not found`,
		"image/pull-not-found"},
	{"cri-o container waiting message", Status,
		`rpc error: code = Unknown desc = reading manifest v1.29.99 in docker.io/rancher/kubectl: manifest unknown: manifest unknown`,
		"image/pull-not-found"},
	{"seed harbor", Event,
		`Failed to pull image "registry.internal/base/kubectl:v1.29.9": rpc error: code = NotFound desc = failed to pull and unpack image "registry.internal/base/kubectl:v1.29.9": failed to resolve reference "registry.internal/base/kubectl:v1.29.9": unexpected status from HEAD request to https://registry.internal/v2/base/kubectl/manifests/v1.29.9: 404 Not Found; manifest unknown: The named manifest is not known`,
		"image/pull-not-found"},
	{"dockerd", Log, `Error response from daemon: manifest for rancher/kubectl:v1.29.99 not found: manifest unknown: manifest unknown`, "image/pull-not-found"},

	// ---- image/pull-auth
	{"insufficient_scope", Event,
		`Failed to pull image "registry.internal/rancher/fleet-agent:v0.16.0": rpc error: code = Unknown desc = failed to pull and unpack image "registry.internal/rancher/fleet-agent:v0.16.0": failed to resolve reference "registry.internal/rancher/fleet-agent:v0.16.0": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`,
		"image/pull-auth"},
	{"anonymous token 401", Event,
		`Failed to pull image "ghcr.io/acme/tools:1.0.0": failed to pull and unpack image "ghcr.io/acme/tools:1.0.0": failed to resolve reference "ghcr.io/acme/tools:1.0.0": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://ghcr.io/token?scope=repository%3Aacme%2Ftools%3Apull&service=ghcr.io: 401 Unauthorized`,
		"image/pull-auth"},
	{"HEAD 401 is a pull, not a registration", Event,
		`Failed to pull image "harbor.example.com/rancher/kubectl:v1.30.3": rpc error: code = Unknown desc = failed to pull and unpack image "harbor.example.com/rancher/kubectl:v1.30.3": failed to resolve reference "harbor.example.com/rancher/kubectl:v1.30.3": unexpected status from HEAD request to https://harbor.example.com/v2/rancher/kubectl/manifests/v1.30.3: 401 Unauthorized`,
		"image/pull-auth"},
	{"403 forbidden", Event,
		`Failed to pull image "ghcr.io/demon-project/runtime:latest": failed to authorize: failed to fetch anonymous token: unexpected status: 403 Forbidden`,
		"image/pull-auth"},

	// ---- image/pull-network
	{"i/o timeout in pull beats api-unreachable", Event,
		`Failed to pull image "harbor.example.com/rancher/kubectl:v1.30.3": rpc error: code = DeadlineExceeded desc = failed to pull and unpack image "harbor.example.com/rancher/kubectl:v1.30.3": failed to resolve reference "harbor.example.com/rancher/kubectl:v1.30.3": failed to do request: Head "https://harbor.example.com/v2/rancher/kubectl/manifests/v1.30.3": dial tcp 10.20.30.40:443: i/o timeout`,
		"image/pull-network"},
	{"cri-o dns", Status,
		`rpc error: code = Unknown desc = initializing source docker://harbor.example.com/rancher/kubectl:v1.30.3: pinging container registry harbor.example.com: Get "https://harbor.example.com/v2/": dial tcp: lookup harbor.example.com on 10.0.0.2:53: no such host`,
		"image/pull-network"},
	{"registry cert in pull", Event,
		`Failed to pull image "harbor.example.com/rancher/kubectl:v1.30.3": rpc error: code = Unknown desc = failed to pull and unpack image "harbor.example.com/rancher/kubectl:v1.30.3": failed to resolve reference "harbor.example.com/rancher/kubectl:v1.30.3": failed to do request: Head "https://harbor.example.com/v2/rancher/kubectl/manifests/v1.30.3": tls: failed to verify certificate: x509: certificate signed by unknown authority`,
		"image/pull-network"},
	{"token endpoint timeout is network not auth", Event,
		`Failed to pull image "docker.io/rancher/kubectl:v1.30.3": failed to pull and unpack image "docker.io/rancher/kubectl:v1.30.3": failed to resolve reference "docker.io/rancher/kubectl:v1.30.3": failed to authorize: failed to fetch anonymous token: Get "https://auth.docker.io/token?scope=repository%3Arancher%2Fkubectl%3Apull&service=registry.docker.io": net/http: TLS handshake timeout`,
		"image/pull-network"},

	{"docker hub rate limit", Event,
		`Failed to pull image "docker.io/rancher/fleet-agent:v0.16.0": failed to pull and unpack image "docker.io/rancher/fleet-agent:v0.16.0": failed to copy: httpReadSeeker: failed open: unexpected status code https://registry-1.docker.io/v2/rancher/fleet-agent/manifests/sha256:4f3b0c1d2e5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c: 429 Too Many Requests - Server message: toomanyrequests: You have reached your unauthenticated pull rate limit. https://www.docker.com/increase-rate-limit`,
		"image/pull-network"},
	{"registry behind a proxy that is down", Event,
		`Failed to pull image "registry.example.com/rancher/fleet-agent:v0.16.0": rpc error: code = Unknown desc = failed to pull and unpack image "registry.example.com/rancher/fleet-agent:v0.16.0": failed to resolve reference "registry.example.com/rancher/fleet-agent:v0.16.0": unexpected status from HEAD request to https://registry.example.com/v2/rancher/fleet-agent/manifests/v0.16.0: 503 Service Unavailable`,
		"image/pull-network"},
	{"cgo resolver EAI_AGAIN", Event,
		`Failed to pull image "docker.io/rancher/fleet-agent:v0.16.0": rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/rancher/fleet-agent:v0.16.0": failed to resolve reference "docker.io/rancher/fleet-agent:v0.16.0": failed to do request: Head "https://registry-1.docker.io/v2/rancher/fleet-agent/manifests/v0.16.0": dial tcp: lookup registry-1.docker.io: Try again`,
		"image/pull-network"},

	// ---- image/arch-mismatch
	{"container log", Log, `exec /usr/bin/kubectl: exec format error`, "image/arch-mismatch"},
	{"no match for platform (contains not found)", Event,
		`Failed to pull image "nginx:1.14.2": rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:1.14.2": no match for platform in manifest: not found`,
		"image/arch-mismatch"},
	{"runc", Event,
		`Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/bin/sh": exec format error: unknown`,
		"image/arch-mismatch"},
	{"dockerd platform", Log,
		`docker: Error response from daemon: image with reference rancher/kubectl:v1.30.3 was found but does not match the specified platform: wanted linux/arm64, actual: linux/amd64.`,
		"image/arch-mismatch"},

	// ---- pod/unschedulable-taints
	{"untolerated taints", Event,
		`0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 node(s) had untolerated taint {dedicated: edge}. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.`,
		"pod/unschedulable-taints"},
	{"1.19-1.24 form", Event,
		`0/6 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate, 5 node(s) didn't match Pod's node affinity/selector.`,
		"pod/unschedulable-taints"},
	{"1.32+ form", Status,
		`0/3 nodes are available: 3 node(s) had untolerated taint(s). preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.`,
		"pod/unschedulable-taints"},

	// ---- pod/unschedulable-resources
	{"taint + insufficient: resources win", Event,
		`0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 3 Insufficient cpu. preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.`,
		"pod/unschedulable-resources"},
	{"too many pods", Event, `0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.`, "pod/unschedulable-resources"},
	{"host ports", Event, `0/3 nodes are available: 3 node(s) didn't have free ports for the requested pod ports. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.`, "pod/unschedulable-resources"},
	{"kubelet admission", Status, `Node didn't have enough resource: cpu, requested: 500, used: 3800, capacity: 4000`, "pod/unschedulable-resources"},

	// ---- pod/config-ref-missing
	{"CreateContainerConfigError", Event, `Error: configmap "fleet-agent" not found`, "pod/config-ref-missing"},
	{"FailedMount configmap", Event, `MountVolume.SetUp failed for volume "config" : configmap "fleet-agent" not found`, "pod/config-ref-missing"},
	{"FailedMount secret", Event, `MountVolume.SetUp failed for volume "kubeconfig" : secret "fleet-agent" not found`, "pod/config-ref-missing"},
	{"env key", Event, `Error: couldn't find key token in Secret cattle-fleet-system/fleet-agent`, "pod/config-ref-missing"},
	{"volume key", Event, `MountVolume.SetUp failed for volume "config-volume" : configmap references non-existent config key: agent.yaml`, "pod/config-ref-missing"},

	// ---- workload/admission-denied
	{"webhook denied", Event,
		`Error creating: admission webhook "validate.kyverno.svc-fail" denied the request: policy Deployment/cattle-fleet-system/fleet-agent for resource violation: require-requests-limits: validate-resources: validation error: CPU and memory resource requests and limits are required`,
		"workload/admission-denied"},

	// ---- workload/webhook-unavailable: the webhook's backend, not its policy
	{"webhook timeout beats api-unreachable", Event,
		`Error creating: Internal error occurred: failed calling webhook "rancher.cattle.io.pods": failed to call webhook: Post "https://rancher-webhook.cattle-system.svc:443/v1/webhook/validation/pods?timeout=10s": context deadline exceeded`,
		"workload/webhook-unavailable"},
	{"webhook cert beats agent/tls", Event,
		`Error creating: Internal error occurred: failed calling webhook "rancher.cattle.io.pods": failed to call webhook: Post "https://rancher-webhook.cattle-system.svc:443/v1/webhook/validation/pods?timeout=10s": tls: failed to verify certificate: x509: certificate signed by unknown authority`,
		"workload/webhook-unavailable"},
	{"webhook without endpoints (rancher#42699)", Status,
		`Internal error occurred: failed calling webhook "rancher.cattle.io.clusters.management.cattle.io": failed to call webhook: Post "https://rancher-webhook.cattle-system.svc:443/v1/webhook/mutation/clusters.management.cattle.io?timeout=10s": no endpoints available for service "rancher-webhook"`,
		"workload/webhook-unavailable"},
	{"webhook connection refused", Event,
		`Error creating: Internal error occurred: failed calling webhook "rancher.cattle.io.namespaces": failed to call webhook: Post "https://rancher-webhook.cattle-system.svc:443/v1/webhook/validation/namespaces?timeout=10s": dial tcp 10.43.12.7:443: connect: connection refused`,
		"workload/webhook-unavailable"},
	{"pod security", Event,
		`Error creating: pods "fleet-agent-7d9c8b6f5d-x2k4p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "fleet-agent" must set securityContext.allowPrivilegeEscalation=false)`,
		"workload/admission-denied"},

	// ---- workload/quota-exceeded
	{"exceeded quota", Event,
		`Error creating: pods "fleet-agent-7d9c8b6f5d-x2k4p" is forbidden: exceeded quota: compute-resources, requested: limits.memory=1Gi, used: limits.memory=7680Mi, limited: limits.memory=8Gi`,
		"workload/quota-exceeded"},
	{"must specify", Event,
		`Error creating: pods "apply-k3s-server-on-node1-with-6c1e0e2c-4dpgc" is forbidden: failed quota: compute-resources: must specify limits.cpu for: upgrade; limits.memory for: upgrade`,
		"workload/quota-exceeded"},
	{"old must specify", Event, `pods "worker" is forbidden: failed quota: quota-team: must specify limits.cpu,limits.memory,requests.cpu,requests.memory`, "workload/quota-exceeded"},

	// ---- pod/oom-killed
	{"terminated reason", Status, `OOMKilled`, "pod/oom-killed"},
	{"describe", Log, `      Reason:       OOMKilled`, "pod/oom-killed"},

	// ---- suc/*
	{"deadline", Status,
		`Job system-upgrade/apply-k3s-agent-plan-on-worker-2-with-8e6c1f9b2a4d-e0c1a failed on Node worker-2: DeadlineExceeded: Job was active longer than specified deadline`,
		"suc/job-deadline"},
	{"deadline event on the Job", Event, `Job was active longer than specified deadline`, "suc/job-deadline"},
	{"eviction RBAC", Log,
		`error when evicting pods/"fleet-agent-7d9c8b6f5d-x2k4p" -n "cattle-fleet-system" (will retry after 5s): pods "fleet-agent-7d9c8b6f5d-x2k4p" is forbidden: User "system:serviceaccount:system-upgrade:system-upgrade" cannot create resource "pods/eviction" in API group "" in the namespace "cattle-fleet-system"`,
		"suc/rbac"},
	{"controller SA", Log,
		`E1129 09:00:00.000001       1 reflector.go:158] "Unhandled Error" err="failed to list *v1.Plan: plans.upgrade.cattle.io is forbidden: User \"system:serviceaccount:cattle-system:system-upgrade-controller\" cannot list resource \"plans\" in API group \"upgrade.cattle.io\" at the cluster scope"`,
		"suc/rbac"},
	{"backoff", Status,
		`Job system-upgrade/apply-k3s-server-plan-on-cp-1-with-8e6c1f9b2a4d-5bq7z failed on Node cp-1: BackoffLimitExceeded: Job has reached the specified backoff limit`,
		"suc/plan-stuck"},
	{"drain blocked by PDB", Log,
		`error when evicting pods/"rancher-7f8d9c6b5-kq4mz" -n "cattle-system" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`,
		"suc/plan-stuck"},
}

// negatives look like failures (or contain a rule's words) but are healthy or unrelated.
var negatives = []string{
	`time="2024-11-29T08:00:00Z" level=info msg="no changes, not pulling image"`,
	`Successfully pulled image "docker.io/rancher/kubectl:v1.30.3" in 2.341s (2.341s including waiting). Image size: 15342121 bytes.`,
	`Pulling image "docker.io/rancher/fleet-agent:v0.16.0"`,
	`Container image "docker.io/rancher/fleet-agent:v0.16.0" already present on machine`,
	`Deployed release fleet-agent-local`,
	`time="2024-11-29T08:00:00Z" level=info msg="Deployed release fleet-agent-local"`,
	`{"level":"info","ts":"2024-11-29T08:00:00Z","logger":"setup","msg":"listening for changes on upstream cluster","cluster":"local","namespace":"cluster-fleet-local-local-1a3d67d0a899"}`,
	`{"level":"info","ts":"2024-11-29T08:00:00Z","logger":"setup","msg":"successfully registered with upstream cluster","namespace":"cluster-fleet-default-c-m-7x9k2p4q-8f3a6c1e2b4d"}`,
	`time="2024-11-29T08:00:00Z" level=info msg="Creating clusterregistration with id 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d' for new token"`,
	`2024-11-29T08:00:00Z	INFO	Starting cluster status ticker	{"checkin interval": "15m0s", "cluster namespace": "cluster-fleet-default-c-m-7x9k2p4q-8f3a6c1e2b4d", "cluster name": "c-m-7x9k2p4q"}`,
	`Successfully assigned cattle-fleet-system/fleet-agent-7d9c8b6f5d-x2k4p to worker-1`,
	`Created container: fleet-agent`,
	`Started container fleet-agent`,
	`level=warning msg="Insufficient data to compute drift, skipping"`,
	`level=info msg="metrics" unauthorizedRequests=0 forbiddenRequests=0`,
	`Scaled up replica set fleet-agent-7d9c8b6f5d from 0 to 1`,
	`I1129 08:00:00.000001       1 leaderelection.go:268] successfully acquired lease cattle-fleet-system/fleet-agent`,
	`Back-off restarting failed container fleet-agent in pod fleet-agent-7d9c8b6f5d-x2k4p_cattle-fleet-system(0e1f2a3b-4c5d-6e7f-8a9b-0c1d2e3f4a5b)`,
	`Job system-upgrade/apply-k3s-server-plan-on-cp-1-with-8e6c1f9b2a4d-5bq7z completed`,
	`certificate is valid until 2026-01-01T00:00:00Z`,
	`level=info msg="plan k3s-server: latest version v1.30.6+k3s1 resolved"`,
}

func TestPositives(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range positives {
		t.Run(c.want+"/"+c.name, func(t *testing.T) {
			m, ok := Classify(c.text, c.scope)
			if !ok {
				t.Fatalf("no match for %q", c.text)
			}
			if m.ID != c.want {
				t.Fatalf("got %s (rule %q, source %s), want %s\ntext: %s", m.ID, m.Rule.All, m.Rule.Source, c.want, c.text)
			}
			if m.Text != c.text || m.Rule == nil || m.Rule.ID != m.ID {
				t.Fatalf("bad match %+v", m)
			}
		})
		covered[c.want] = true
	}
	for id := range knownIDs {
		if !covered[id] {
			t.Errorf("no positive test for %s", id)
		}
	}
}

func TestNegatives(t *testing.T) {
	for _, s := range negatives {
		if m, ok := Classify(s, Any); ok {
			t.Errorf("%q matched %s (rule %q %q)", s, m.ID, m.Rule.All, m.Rule.Regexp)
		}
	}
}

func TestScopes(t *testing.T) {
	// "panic:" is a log-only rule: a status message quoting it is not an agent crash.
	if _, ok := Classify(`panic: assignment to entry in nil map`, Status); ok {
		t.Error("panic: matched in Status scope")
	}
	if m, ok := Classify(`panic: assignment to entry in nil map`, Log|Status); !ok || m.ID != "agent/config-invalid" {
		t.Errorf("panic: in Log|Status = %v %v", m.ID, ok)
	}
	if _, ok := Classify(`OOMKilled`, 0); ok {
		t.Error("scope 0 matched")
	}
	if _, ok := Classify("", Any); ok {
		t.Error("empty text matched")
	}
	if got := (Log | Event).String(); got != "log|event" {
		t.Errorf("Scope.String = %q", got)
	}
}

func TestTable(t *testing.T) {
	rs := Rules()
	table, _ := ruleTable()
	if len(rs) != len(table) {
		t.Fatalf("Rules() returned %d rules, table has %d", len(rs), len(table))
	}
	for i, r := range rs {
		if !knownIDs[r.ID] {
			t.Errorf("rule %d: unknown ID %q", i, r.ID)
		}
		if r.Scopes == 0 || r.Scopes&^Any != 0 {
			t.Errorf("rule %d (%s): bad scopes %v", i, r.ID, r.Scopes)
		}
		if len(r.All) == 0 {
			t.Errorf("rule %d (%s): no All literal (every rule needs a cheap pre-filter)", i, r.ID)
		}
		for _, s := range r.All {
			if s == "" || s != strings.ToLower(s) {
				t.Errorf("rule %d (%s): All entry %q empty or not lower-case", i, r.ID, s)
			}
		}
		if _, err := regexp.Compile(r.Regexp); err != nil {
			t.Errorf("rule %d (%s): Regexp does not compile: %v", i, r.ID, err)
		}
		if r.Regexp != "" && r.Regexp != strings.ToLower(r.Regexp) && !strings.Contains(r.Regexp, `\S`) && !strings.Contains(r.Regexp, `\s`) {
			t.Errorf("rule %d (%s): Regexp %q has upper-case letters but the text is lower-cased", i, r.ID, r.Regexp)
		}
		if strings.TrimSpace(r.Source) == "" {
			t.Errorf("rule %d (%s): no Source", i, r.ID)
		}
	}
	// Rules returns a copy.
	rs[0].All[0] = "mutated"
	if table[0].rule.All[0] == "mutated" {
		t.Error("Rules() exposes the table")
	}
}

// naiveRules is the table evaluated the obvious way (strings.Contains on the normalised text,
// every Regexp through the regexp engine, every Family parser): the reference the automaton must agree with.
var naiveRules = func() []*regexp.Regexp {
	table, _ := ruleTable()
	out := make([]*regexp.Regexp, len(table))
	for i, c := range table {
		if c.rule.Regexp != "" {
			out[i] = regexp.MustCompile(c.rule.Regexp)
		}
	}
	return out
}()

func classifyNaive(text string, scope Scope) string {
	if text == "" || scope == 0 {
		return ""
	}
	lower := normalize(text)
	table, _ := ruleTable()
next:
	for i, c := range table {
		if c.rule.Scopes&scope == 0 {
			continue
		}
		for _, s := range c.rule.All {
			if !strings.Contains(lower, s) {
				continue next
			}
		}
		if naiveRules[i] != nil && !naiveRules[i].MatchString(lower) {
			continue
		}
		if c.rule.Family != nil && !c.rule.Family(lower) {
			continue
		}
		return c.rule.ID
	}
	return ""
}

func checkAgainstNaive(t testing.TB, text string, scope Scope) {
	m, _ := Classify(text, scope)
	if want := classifyNaive(text, scope); m.ID != want {
		t.Errorf("automaton says %q, reference says %q for %q (scope %v)", m.ID, want, text, scope)
	}
}

func TestAutomatonAgreesWithReference(t *testing.T) {
	var texts []string
	for _, c := range positives {
		texts = append(texts, c.text)
	}
	texts = append(texts, negatives...)
	texts = append(texts, benchLines()[:200]...)
	for _, s := range texts {
		variants := []string{s, strings.ToUpper(s), strings.ReplaceAll(s, `"`, `\"`), strings.ReplaceAll(s, `"`, `\\\"`), s[:len(s)/2], s[len(s)/3:]}
		for _, v := range variants {
			for _, sc := range []Scope{Log, Event, Status, Any} {
				checkAgainstNaive(t, v, sc)
			}
		}
	}
}

func FuzzClassifyAgreesWithReference(f *testing.F) {
	for _, c := range positives {
		f.Add(c.text)
	}
	for _, s := range negatives {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkAgainstNaive(t, s, Any)
		_ = Signature(s)
		_ = SchedulingReasons(s)
	})
}

func TestLiteralAlternation(t *testing.T) {
	for re, want := range map[string]string{
		`a|b c|client\.timeout exceeded`: "a,b c,client.timeout exceeded",
		`x509: |tls: `:                   "x509: ,tls: ",
		`\bunauthorized\b`:               "",
		`(?:a|b)`:                        "",
		`a.*b`:                           "",
		`a||b`:                           "",
	} {
		got, ok := literalAlternation(re)
		if strings.Join(got, ",") != want || ok != (want != "") {
			t.Errorf("literalAlternation(%q) = %q, %v", re, got, ok)
		}
	}
}

func TestClassifyLinesKeepsLastPerID(t *testing.T) {
	lines := []string{
		`time="2024-11-29T08:00:00Z" level=info msg="starting fleet agent"`,
		`E1129 07:58:02.000001       1 reflector.go:158] "Unhandled Error" err="failed to list *v1alpha1.BundleDeployment: the server could not find the requested resource (get bundledeployments.fleet.cattle.io)"`,
		`time="2024-11-29T08:00:01Z" level=error msg="Failed to register agent: registration failed: cannot create clusterregistration on management cluster for cluster id 'x': Post \"https://rancher.example.com/apis\": dial tcp 203.0.113.10:443: connect: connection refused"`,
		"",
		`E1129 07:59:02.000001       1 reflector.go:158] "Unhandled Error" err="failed to list *v1alpha1.BundleDeployment: the server could not find the requested resource (get bundledeployments.fleet.cattle.io) LAST"`,
	}
	got := ClassifyLines(lines, Log)
	if len(got) != 2 {
		t.Fatalf("got %d matches: %+v", len(got), got)
	}
	if got[0].ID != "agent/crd-missing" || !strings.HasSuffix(got[0].Text, `LAST"`) {
		t.Errorf("first = %s %q, want agent/crd-missing with the last line", got[0].ID, got[0].Text)
	}
	if got[1].ID != "agent/api-unreachable" {
		t.Errorf("second = %s", got[1].ID)
	}
	if ClassifyLines(nil, Log) != nil {
		t.Error("nil lines gave matches")
	}
}

func TestSignature(t *testing.T) {
	same := [][2]string{
		{ // logrus, different clusters, namespaces, times
			`time="2024-11-29T07:58:02Z" level=error msg="error syncing 'cluster-fleet-default-c-m-7x9k2p4q-8f3a6c1e2b4d/fleet-agent-c-m-7x9k2p4q': handler bundle-deploy: another operation (install/upgrade/rollback) is in progress, requeuing"`,
			`time="2025-01-03T22:01:55Z" level=error msg="error syncing 'cluster-fleet-default-c-m-q4w8e2r6-0a1b2c3d4e5f/fleet-agent-c-m-q4w8e2r6': handler bundle-deploy: another operation (install/upgrade/rollback) is in progress, requeuing"`,
		},
		{ // controller-runtime console, different reconcile IDs and names
			`2024-11-29T07:58:02Z	ERROR	Reconciler error	{"controller": "bundledeployment", "namespace": "cluster-fleet-default-c-m-7x9k2p4q-8f3a6c1e2b4d", "name": "fleet-agent-c-m-7x9k2p4q", "reconcileID": "3f0e9a8c-2d1b-4f6e-9a7c-5b8d0e1f2a3c", "error": "failed deploying bundle: Unable to continue with update: ConfigMap \"fleet-agent\" in namespace \"cattle-fleet-system\" exists and cannot be imported into the current release: invalid ownership metadata; annotation validation error: key \"meta.helm.sh/release-name\" must equal \"fleet-agent-c-m-7x9k2p4q\": current value is \"fleet-agent\""}`,
			`2024-11-30T01:02:03Z	ERROR	Reconciler error	{"controller": "bundledeployment", "namespace": "cluster-fleet-default-edge-042-9a8b7c6d5e4f", "name": "fleet-agent-edge-042", "reconcileID": "7a6b5c4d-3e2f-1a0b-9c8d-7e6f5a4b3c2d", "error": "failed deploying bundle: Unable to continue with update: ConfigMap \"fleet-agent\" in namespace \"cattle-fleet-system\" exists and cannot be imported into the current release: invalid ownership metadata; annotation validation error: key \"meta.helm.sh/release-name\" must equal \"fleet-agent-edge-042\": current value is \"fleet-agent\""}`,
		},
		{ // klog, different pids, times, namespaces, IPs
			`E1129 07:58:02.123456       1 reflector.go:166] "Unhandled Error" err="failed to list *v1alpha1.BundleDeployment: Get \"https://rancher.example.com/apis/fleet.cattle.io/v1alpha1/namespaces/cluster-fleet-default-c-m-7x9k2p4q-8f3a6c1e2b4d/bundledeployments?limit=500\": dial tcp 203.0.113.10:443: i/o timeout"`,
			`E0102 11:22:33.654321       7 reflector.go:166] "Unhandled Error" err="failed to list *v1alpha1.BundleDeployment: Get \"https://rancher.example.com/apis/fleet.cattle.io/v1alpha1/namespaces/cluster-fleet-default-store-17-1f2e3d4c5b6a/bundledeployments?limit=500\": dial tcp 198.51.100.7:443: i/o timeout"`,
		},
		{ // kubelet events for the same missing tag on pods of two clusters
			`Failed to pull image "registry.internal/base/kubectl:v1.29.9": rpc error: code = NotFound desc = failed to pull and unpack image "registry.internal/base/kubectl:v1.29.9": failed to resolve reference "registry.internal/base/kubectl:v1.29.9": registry.internal/base/kubectl:v1.29.9: not found`,
			`Failed to pull image "registry.internal/base/kubectl:v1.29.9": rpc error: code = NotFound desc = failed to pull and unpack image "registry.internal/base/kubectl:v1.29.9": failed to resolve reference "registry.internal/base/kubectl:v1.29.9": registry.internal/base/kubectl:v1.29.9: not found`,
		},
		{ // SUC job failures on different nodes
			`Job system-upgrade/apply-k3s-agent-plan-on-worker-2-with-8e6c1f9b2a4d-e0c1a failed on Node worker-2: DeadlineExceeded: Job was active longer than specified deadline`,
			`Job system-upgrade/apply-k3s-agent-plan-on-ip-10-0-7-19-with-8e6c1f9b2a4d-x9z2k failed on Node ip-10-0-7-19: DeadlineExceeded: Job was active longer than specified deadline`,
		},
		{ // scheduler, different pod names in the JSON envelope, same counts shape
			`{"level":"info","ts":1732867082.123,"caller":"schedule_one.go:1045","msg":"Unable to schedule pod; no fit; waiting","pod":"cattle-fleet-system/fleet-agent-7d9c8b6f5d-x2k4p","err":"0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."}`,
			`{"level":"info","ts":1732953482.987,"caller":"schedule_one.go:1045","msg":"Unable to schedule pod; no fit; waiting","pod":"cattle-fleet-system/fleet-agent-58b4f9c7d8-q7w2z","err":"0/5 nodes are available: 5 Insufficient memory. preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod."}`,
		},
	}
	for i, p := range same {
		a, b := Signature(p[0]), Signature(p[1])
		if a != b {
			t.Errorf("pair %d: signatures differ:\n  %s\n  %s", i, a, b)
		}
		if a == "" {
			t.Errorf("pair %d: empty signature", i)
		}
	}

	different := [][2]string{
		{`failed to list *v1alpha1.BundleDeployment: Unauthorized`, `failed to list *v1alpha1.BundleDeployment: Forbidden`},
		{`failed deploying bundle: another operation (install/upgrade/rollback) is in progress`, `failed deploying bundle: "fleet-agent-c-m-7x9k2p4q" has no deployed releases`},
		{`Get "https://rancher.example.com/ping": dial tcp 203.0.113.10:443: i/o timeout`, `Get "https://rancher.example.com/ping": dial tcp 203.0.113.10:443: connect: connection refused`},
		{`0/3 nodes are available: 3 Insufficient memory.`, `0/3 nodes are available: 3 Insufficient cpu.`},
		{`x509: certificate signed by unknown authority`, `x509: certificate has expired or is not yet valid: current time 2024-11-29T07:58:02Z is before 2024-11-29T08:14:37Z`},
	}
	for i, p := range different {
		if a, b := Signature(p[0]), Signature(p[1]); a == b {
			t.Errorf("pair %d: different errors share signature %q", i, a)
		}
	}

	// Spot checks of what is kept and what is replaced.
	s := Signature(`E1129 07:58:02.123456       1 reflector.go:166] "Unhandled Error" err="failed to list *v1alpha1.BundleDeployment: Unauthorized"`)
	for _, want := range []string{"unhandled error", "failed to list", "bundledeployment", "unauthorized"} {
		if !strings.Contains(s, want) {
			t.Errorf("signature %q lost %q", s, want)
		}
	}
	for _, gone := range []string{"07:58", "e1129", "reflector.go"} {
		if strings.Contains(s, gone) {
			t.Errorf("signature %q kept %q", s, gone)
		}
	}
	if got := Signature("  Unauthorized \t"); got != "unauthorized" {
		t.Errorf("Signature trims and lower-cases: %q", got)
	}
}

func TestSchedulingReasons(t *testing.T) {
	cases := []struct {
		msg  string
		want map[string]int
	}{
		{`0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 node(s) had untolerated taint {dedicated: edge}. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.`,
			map[string]int{"pod/unschedulable-taints": 3}},
		{`0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 3 Insufficient cpu. preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.`,
			map[string]int{"pod/unschedulable-taints": 1, "pod/unschedulable-resources": 3}},
		{`0/6 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate, 2 Insufficient cpu, 2 Insufficient memory, 3 node(s) didn't match Pod's node affinity/selector.`,
			map[string]int{"pod/unschedulable-taints": 1, "pod/unschedulable-resources": 4, OtherReason: 3}},
		{"0/4 nodes are available: 1 node(s) had untolerated taint(s),\n3 Insufficient nvidia.com/gpu.",
			map[string]int{"pod/unschedulable-taints": 1, "pod/unschedulable-resources": 3}},
		{`0/2 nodes are available: 2 node(s) were unschedulable. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.`,
			map[string]int{"pod/unschedulable-taints": 2}},
		{`0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.`,
			map[string]int{}},
	}
	for i, c := range cases {
		got := SchedulingReasons(c.msg)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("case %d: got %v, want %v", i, got, c.want)
		}
	}
	if SchedulingReasons("Successfully assigned ns/pod to node-1") != nil {
		t.Error("non-scheduling message parsed")
	}
}

// benchLines builds ~5000 realistic agent/kubelet lines: mostly healthy, some failing.
func benchLines() []string {
	healthy := []string{
		`2024-11-29T08:00:00Z	INFO	bundledeployment	Reconcile finished, updating the bundledeployment status	{"controller": "bundledeployment", "controllerGroup": "fleet.cattle.io", "controllerKind": "BundleDeployment", "BundleDeployment": {"name":"fleet-agent-c-m-7x9k2p4q","namespace":"cluster-fleet-default-c-m-7x9k2p4q-8f3a6c1e2b4d"}, "namespace": "cluster-fleet-default-c-m-7x9k2p4q-8f3a6c1e2b4d", "name": "fleet-agent-c-m-7x9k2p4q", "reconcileID": "3f0e9a8c-2d1b-4f6e-9a7c-5b8d0e1f2a3c"}`,
		`I1129 08:00:00.000001       1 leaderelection.go:268] successfully acquired lease cattle-fleet-system/fleet-agent`,
		`time="2024-11-29T08:00:00Z" level=info msg="Deployed release fleet-agent-local"`,
		`{"level":"info","ts":"2024-11-29T08:00:00Z","logger":"clusterstatus","msg":"Reporting cluster status","cluster":"c-m-7x9k2p4q","nodes":3}`,
		`Successfully pulled image "docker.io/rancher/kubectl:v1.30.3" in 2.341s (2.341s including waiting). Image size: 15342121 bytes.`,
		`2024-11-29T08:00:00Z	INFO	drift	Refreshing drift detection	{"controller": "drift-reconciler", "name": "fleet-agent-c-m-7x9k2p4q"}`,
		`W1129 08:00:00.000001       1 warnings.go:70] autoscaling/v2beta2 HorizontalPodAutoscaler is deprecated in v1.23+, unavailable in v1.26+; use autoscaling/v2 HorizontalPodAutoscaler`,
	}
	var failing []string
	for i, c := range positives {
		if i%3 == 0 {
			failing = append(failing, c.text)
		}
	}
	lines := make([]string, 0, 5000)
	for i, f := 0, 0; len(lines) < 5000; i++ {
		if i%10 == 9 {
			lines = append(lines, failing[f%len(failing)])
			f++
		} else {
			lines = append(lines, healthy[i%len(healthy)])
		}
	}
	return lines
}

func BenchmarkClassifyLines(b *testing.B) {
	lines := benchLines()
	var n int
	for _, l := range lines {
		n += len(l)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if len(ClassifyLines(lines, Any)) == 0 {
			b.Fatal("no matches")
		}
	}
}

func BenchmarkSignature(b *testing.B) {
	s := positives[0].text
	for i := 0; i < b.N; i++ {
		_ = Signature(s)
	}
}

func TestRemovedAPI(t *testing.T) {
	for _, c := range []struct{ text, kind, gv, in string }{
		{`no matches for kind "FlowSchema" in version "flowcontrol.apiserver.k8s.io/v1beta3"`, "FlowSchema", "flowcontrol.apiserver.k8s.io/v1beta3", "1.32"},
		{`no matches for kind \"CronJob\" in version \"batch/v1beta1\"`, "CronJob", "batch/v1beta1", "1.25"},
		{`no matches for kind "Ingress" in version "extensions/v1beta1"`, "Ingress", "extensions/v1beta1", "1.22"},
		{`no matches for kind "ServiceMonitor" in version "monitoring.coreos.com/v1"`, "", "", ""},
		{`no matches for kind "VolumeSnapshot" in version "snapshot.storage.k8s.io/v1beta1"`, "", "", ""},
	} {
		kind, gv, ok := RemovedAPI(c.text)
		if kind != c.kind || gv != c.gv || ok != (c.kind != "") {
			t.Errorf("RemovedAPI(%q) = %q, %q, %t; want %q, %q", c.text, kind, gv, ok, c.kind, c.gv)
		}
		if ok {
			if in := RemovedIn(kind, gv); in != c.in {
				t.Errorf("RemovedIn(%s, %s) = %q, want %q", kind, gv, in, c.in)
			}
		}
	}
}
