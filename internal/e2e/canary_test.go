package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/cli"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// syncBuffer is a bytes.Buffer safe for a goroutine writing while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func runServeCLI(ctx context.Context, errOut io.Writer, args []string) int {
	return cli.Run(ctx, cli.Streams{In: strings.NewReader(""), Out: io.Discard, ErrOut: errOut}, args)
}

// canaries are unique values planted wherever a cluster keeps secrets, one per place, so a
// leak names where the value came from. All start with prefix (CANARY-<random>-).
type canaries struct {
	prefix string
	where  map[string]string // value → where it was planted
}

func newCanaries(t *testing.T) *canaries {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return &canaries{prefix: "CANARY-" + hex.EncodeToString(b) + "-", where: map[string]string{}}
}

// v returns the canary of a place.
func (c *canaries) v(place string) string {
	// Only letters, digits and '-': find reads a canary up to the first other character.
	val := c.prefix + strings.Map(func(r rune) rune {
		if r < 128 && isAlnum(byte(r)) {
			return r
		}
		return '-'
	}, place) + "-token"
	c.where[val] = place
	return val
}

var (
	b64Run    = regexp.MustCompile(`[A-Za-z0-9+/]{12,}={0,2}`)
	b64URLRun = regexp.MustCompile(`[A-Za-z0-9_-]{12,}={0,2}`)
)

// find lists the places whose canary is in data: in clear, or under any number of base64 and
// gzip layers (a Secret's data, a docker config's auth, a Helm release payload), up to depth.
func (c *canaries) find(data []byte, depth int) []string {
	var out []string
	seen := map[string]bool{}
	add := func(places []string) {
		for _, p := range places {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		if zr, err := gzip.NewReader(bytes.NewReader(data)); err == nil {
			if plain, err := io.ReadAll(io.LimitReader(zr, 64<<20)); err == nil {
				add(c.find(plain, depth))
			}
		}
	}
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte(c.prefix))
		if j < 0 {
			break
		}
		start := i + j
		end := start + len(c.prefix)
		for end < len(data) && (isAlnum(data[end]) || data[end] == '-') {
			end++
		}
		place := c.where[string(data[start:end])]
		if place == "" {
			place = "an unknown canary " + string(data[start:end])
		}
		add([]string{place})
		i = end
	}
	if depth <= 0 {
		return out
	}
	for _, m := range wrappedB64.FindAll(data, -1) {
		add(c.findUnwrapped(m, depth))
	}
	for _, re := range []*regexp.Regexp{b64Run, b64URLRun} {
		for _, m := range re.FindAll(data, -1) {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
				dec, err := enc.DecodeString(string(m))
				if err != nil {
					continue
				}
				add(c.find(dec, depth-1))
				break
			}
		}
	}
	return out
}

func isAlnum(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// check fails the test when any canary is in an output, naming the output and the places.
func (c *canaries) check(t *testing.T, output string, data []byte) {
	t.Helper()
	if places := c.find(data, 4); len(places) > 0 {
		sort.Strings(places)
		t.Errorf("%s leaks the secret planted in: %s", output, strings.Join(places, "; "))
	}
}

// secretsBundle is the agent-pending-upgrade incident of prod-eu-1 with secrets planted in
// every place a cluster keeps them; the Helm payloads get theirs once replayed.
func secretsBundle(t *testing.T, c *canaries) string {
	t.Helper()
	src := scenario("fleet/agent-pending-upgrade-incident")
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "clusters", "prod-eu-1")
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	plantMetadataServer(t, dir, c)

	// The agent's Deployment and Pod: environment values (a proxy URL with a password, a plain
	// value with an unremarkable name), next to a valueFrom that names a key and holds no value;
	// the Deployment also carries a last-applied-configuration annotation.
	wl := filepath.Join(root, "cattle-fleet-system", "workloads.yaml")
	b, err := os.ReadFile(wl)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		var podSpec map[string]any
		switch o["kind"] {
		case "Deployment":
			podSpec = o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			md := o["metadata"].(map[string]any)
			md["annotations"].(map[string]any)["kubectl.kubernetes.io/last-applied-configuration"] =
				`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"fleet-agent","namespace":"cattle-fleet-system"},"spec":{"template":{"spec":{"containers":[{"name":"fleet-agent","env":[{"name":"API_TOKEN","value":"` + c.v("last-applied of the agent Deployment") + `"}]}]}}}}`
			// Wrangler's apply keeps its own copy of what it applied: gzip, then base64.
			md["annotations"].(map[string]any)["objectset.rio.cattle.io/applied"] = gzipB64(t,
				`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"fleet-agent","env":[{"name":"CATTLE_TOKEN","value":"`+c.v("objectset applied annotation of the agent Deployment")+`"}]}]}}}}`)
		case "Pod":
			podSpec = o["spec"].(map[string]any)
		}
		if podSpec != nil {
			for _, ctr := range podSpec["containers"].([]any) {
				kind := strings.ToLower(o["kind"].(string))
				ctr.(map[string]any)["env"] = []any{
					map[string]any{"name": "HTTPS_PROXY", "value": "http://agent:" + c.v("proxy URL in the agent "+kind+" env") + "@proxy.internal:3128"},
					map[string]any{"name": "AGENT_EXTRA", "value": c.v("plain env value of the agent " + kind)},
					map[string]any{"name": "API_TOKEN", "value": c.v("API_TOKEN env of the agent " + kind)},
					map[string]any{"name": "FROM_SECRET", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "canary-opaque", "key": "password"}}},
				}
				ctr.(map[string]any)["args"] = []any{"--token", c.v("args of the agent " + kind), "--password=" + c.v("password arg of the agent "+kind)}
			}
		}
		out, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(out))
	}
	if err := os.WriteFile(wl, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}

	kubeconfig := "apiVersion: v1\nkind: Config\nclusters:\n- name: rancher\n  cluster: {server: 'https://rancher.example.com'}\n" +
		"users:\n- name: agent\n  user:\n    token: " + c.v("kubeconfig Secret token") + "\ncontexts:\n- name: rancher\n  context: {cluster: rancher, user: agent}\ncurrent-context: rancher\n"
	dockerConfig := `{"auths":{"registry.example.test":{"username":"puller","password":"` + c.v("docker config password") + `","auth":"` + b64("puller:"+c.v("docker config auth")) + `"}}}`
	lastApplied := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"canary-opaque","namespace":"cattle-fleet-system"},"stringData":{"password":"` + c.v("last-applied of an opaque Secret") + `"}}`
	objects := fmt.Sprintf(`apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata: {name: system-upgrade}
- apiVersion: v1
  kind: Secret
  type: Opaque
  metadata:
    name: canary-opaque
    namespace: cattle-fleet-system
    annotations:
      kubectl.kubernetes.io/last-applied-configuration: %q
  data:
    password: %s
  stringData:
    token: %s
- apiVersion: v1
  kind: Secret
  type: Opaque
  metadata: {name: canary-kubeconfig, namespace: cattle-fleet-system}
  data:
    value: %s
- apiVersion: v1
  kind: Secret
  type: kubernetes.io/dockerconfigjson
  metadata: {name: canary-pull, namespace: cattle-fleet-system}
  data:
    .dockerconfigjson: %s
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: canary-config, namespace: cattle-fleet-system}
  data:
    config.yaml: "apiToken: %s\n"
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: default-controller-env, namespace: system-upgrade}
  data:
    SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE: rancher/kubectl:v1.30.3
    HTTP_PROXY: "http://suc:%s@proxy.internal:3128"
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: canary-kubeconfig, namespace: cattle-fleet-system}
  data:
    kubeconfig: %q
`, lastApplied, b64(c.v("opaque Secret data")), c.v("opaque Secret stringData"), b64(kubeconfig), b64(dockerConfig),
		c.v("ConfigMap data"), c.v("non-SUC key of the SUC env ConfigMap"),
		strings.ReplaceAll(kubeconfig, c.v("kubeconfig Secret token"), c.v("kubeconfig ConfigMap token")))
	if err := os.WriteFile(filepath.Join(root, "cattle-fleet-system", "canaries.yaml"), []byte(objects), 0o644); err != nil {
		t.Fatal(err)
	}

	// A crash-looping pod next to the agent: its previous log is quoted as evidence by scan.
	pod := `apiVersion: v1
kind: Pod
metadata:
  name: canary-sync-7f9c8-x2k4p
  namespace: cattle-fleet-system
  creationTimestamp: '2026-11-28T08:00:00Z'
spec:
  nodeName: prod-eu-1-worker-1
  containers:
  - name: sync
    image: rancher/fleet-agent:v0.16.0
status:
  phase: Running
  containerStatuses:
  - name: sync
    image: rancher/fleet-agent:v0.16.0
    imageID: ''
    ready: false
    restartCount: 9
    started: false
    state:
      waiting: {reason: CrashLoopBackOff, message: 'back-off 5m0s restarting failed container=sync pod=canary-sync-7f9c8-x2k4p'}
    lastState:
      terminated: {reason: Error, exitCode: 1, startedAt: '2026-11-28T09:20:00Z', finishedAt: '2026-11-28T09:25:00Z',
        message: 'fatal: login to https://rancher.example.com failed with --token ` + c.v("termination message of the crash-looping pod") + `'}
  conditions:
  - {type: Ready, status: 'False', reason: ContainersNotReady, lastTransitionTime: '2026-11-28T09:20:00Z',
    message: 'containers with unready status: [sync] password=` + c.v("condition message of the crash-looping pod") + `'}
---
apiVersion: v1
kind: Event
metadata: {name: canary-sync-7f9c8-x2k4p.1871a2b3c4d5e6f7, namespace: cattle-fleet-system}
involvedObject: {apiVersion: v1, kind: Pod, name: canary-sync-7f9c8-x2k4p, namespace: cattle-fleet-system, fieldPath: 'spec.containers{sync}'}
reason: BackOff
type: Warning
count: 40
firstTimestamp: '2026-11-28T08:10:00Z'
lastTimestamp: '2026-11-28T09:25:00Z'
source: {component: kubelet, host: prod-eu-1-worker-1}
message: 'Back-off restarting failed container sync in pod canary-sync-7f9c8-x2k4p_cattle-fleet-system: sync --token ` + c.v("event message (--token)") + `'
---
apiVersion: v1
kind: Event
metadata: {name: canary-sync-7f9c8-x2k4p.1871a2b3c4d5e6f8, namespace: cattle-fleet-system}
involvedObject: {apiVersion: v1, kind: Pod, name: canary-sync-7f9c8-x2k4p, namespace: cattle-fleet-system}
reason: Failed
type: Warning
count: 3
firstTimestamp: '2026-11-28T08:10:00Z'
lastTimestamp: '2026-11-28T09:24:00Z'
source: {component: kubelet, host: prod-eu-1-worker-1}
message: 'Error: failed to start container "sync": Authorization: Bearer ` + c.v("event message (Authorization header)") + `'
---
` + wrappedKubeconfigEvent(c) + `---
apiVersion: upgrade.cattle.io/v1
kind: Plan
metadata: {name: canary-agent-plan, namespace: system-upgrade}
spec:
  concurrency: 1
  version: v1.30.6+rke2r1
  serviceAccountName: system-upgrade
  nodeSelector:
    matchExpressions:
    - {key: canary.example.test/upgrade, operator: In, values: ['true']}
  upgrade:
    image: rancher/rke2-upgrade
    envs:
    - {name: REGISTRY_PASSWORD, value: ` + c.v("SUC Plan upgrade env") + `}
    args: ["--token", "` + c.v("SUC Plan upgrade args") + `"]
    command: ["/bin/sh", "-c", "login -p ` + c.v("SUC Plan upgrade command") + `"]
`
	if err := os.WriteFile(filepath.Join(root, "cattle-fleet-system", "canary-pod.yaml"), []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	secretLines := func(where string) string {
		return strings.Join(append([]string{
			`time="2026-11-28T09:24:58Z" level=info msg="request" header="Authorization: Bearer ` + c.v("bearer token in the "+where+" log") + `"`,
			`time="2026-11-28T09:24:59Z" level=info msg="connecting to postgres with password=` + c.v("password in the "+where+" log") + ` sslmode=disable"`,
			`    token: ` + c.v("kubeconfig token in the "+where+" log"),
			`time="2026-11-28T09:25:00Z" level=fatal msg="sync failed: Get https://sync:` + c.v("URL password in the "+where+" log") + `@rancher.example.com/v3: dial tcp: connection refused"`,
			`+ kubectl --server https://rancher.example.com --token ` + c.v("--token flag in the "+where+" log") + ` get clusters.management.cattle.io`,
			`time="2026-11-28T09:25:01Z" level=info msg="registering with token ` + c.v("bare token in the "+where+" log") + `"`,
			`time="2026-11-28T09:25:02Z" level=debug msg="pull config" config={"auths":{"registry.example.test":{"auth":"` + b64("puller:"+c.v("docker auth in the "+where+" log")) + `"}}}`,
			`time="2026-11-28T09:25:03Z" level=debug msg="GET /v3/connect" X-API-Auth-Header: Bearer ` + c.v("X-API-Auth-Header in the "+where+" log"),
			`time="2026-11-28T09:25:04Z" level=debug msg="request" Cookie: R_SESS=` + c.v("R_SESS cookie in the "+where+" log"),
			`-----BEGIN RSA PRIVATE KEY-----`,
			c.v("PEM body in the " + where + " log"),
			`-----END RSA PRIVATE KEY-----`,
		}, formLines(c, where)...), "\n") + "\n"
	}
	crash := filepath.Join(root, "logs", "cattle-fleet-system", "canary-sync-7f9c8-x2k4p")
	if err := os.MkdirAll(crash, 0o755); err != nil {
		t.Fatal(err)
	}
	// The previous log, read with a 500-line tail, starts inside a private key's body.
	previous := secretLines("crash-looping pod")
	previous = pemCutByTail(c, strings.Count(previous, "\n")) + previous
	if err := os.WriteFile(filepath.Join(crash, "sync.previous.log"), []byte(previous), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crash, "sync.log"), []byte(secretLines("crash-looping pod current")), 0o644); err != nil {
		t.Fatal(err)
	}
	agentLogs, _ := filepath.Glob(filepath.Join(root, "logs", "cattle-fleet-system", "fleet-agent-*", "fleet-agent.log"))
	if len(agentLogs) != 1 {
		t.Fatalf("agent logs: %v", agentLogs)
	}
	f, err := os.OpenFile(agentLogs[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(secretLines("agent")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	plantFleet(t, filepath.Join(dir, "clusters", "local", "fleet"), c)
	plantRancher(t, filepath.Join(dir, "clusters", "local"), c)
	for _, helm := range []string{
		filepath.Join(root, "cattle-fleet-system", "secrets.yaml"),
		filepath.Join(dir, "clusters", "local", "cattle-fleet-local-system", "helm.yaml"),
	} {
		plantHelmFile(t, helm, c)
	}
	return dir
}

// plantRancher puts canaries where Rancher's own upgrades keep secrets and free text on the
// management cluster: a machine-plan Secret's plan and appliedPlan bodies (the join token),
// its failed-output and drain-error, the provisioning-log, a control plane's machine config,
// a Setting whose value unstick does not read. A provisioned cluster mid-upgrade makes the
// rancher/ checks quote what they may.
func plantRancher(t *testing.T, localDir string, c *canaries) {
	t.Helper()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	plan := `{"files":[{"path":"/etc/rancher/rke2/config.yaml.d/50-rancher.yaml","content":"token: K10` + c.v("join token in a machine plan") + `::server:x"}],"instructions":[{"name":"install","image":"rancher/system-agent-installer-rke2:v1.31.4-rke2r1"}]}`
	applied := `{"files":[{"path":"/etc/rancher/rke2/config.yaml.d/50-rancher.yaml","content":"token: K10` + c.v("join token in an applied machine plan") + `::server:x"}]}`
	failed := `{"install":"` + b64("+ /opt/rke2/install.sh\nlogin to registry failed: --token "+c.v("token in a machine plan's failed-output")+"\nerror applying plan") + `"}`
	objects := `apiVersion: v1
kind: List
items:
- apiVersion: provisioning.cattle.io/v1
  kind: Cluster
  metadata: {name: canary-prov, namespace: fleet-default}
  spec:
    kubernetesVersion: v1.31.4+rke2r1
    rkeConfig:
      machineGlobalConfig: {etcd-s3-secret-key: ` + c.v("machineGlobalConfig of a provisioning Cluster") + `}
  status:
    clusterName: c-m-canary01
    conditions:
    - {type: Updated, status: Unknown, reason: Waiting, lastUpdateTime: '2026-11-28T07:00:00Z',
       message: 'configuring control plane node(s) canary-prov-cp-1: error applying plan -- check rancher-system-agent.service logs on node for more information'}
- apiVersion: rke.cattle.io/v1
  kind: RKEControlPlane
  metadata: {name: canary-prov, namespace: fleet-default}
  spec:
    kubernetesVersion: v1.31.4+rke2r1
    machineGlobalConfig: {token: ` + c.v("machineGlobalConfig of an RKEControlPlane") + `}
  status:
    appliedSpec: {kubernetesVersion: v1.30.8+rke2r1}
    agentConnected: true
- apiVersion: cluster.x-k8s.io/v1beta2
  kind: Machine
  metadata:
    name: canary-prov-cp-1
    namespace: fleet-default
    labels: {cluster.x-k8s.io/cluster-name: canary-prov, rke.cattle.io/control-plane-role: 'true'}
  spec:
    clusterName: canary-prov
    bootstrap: {configRef: {apiGroup: rke.cattle.io, kind: RKEBootstrap, name: canary-prov-cp-1}}
    infrastructureRef: {apiGroup: rke-machine.cattle.io, kind: CustomMachine, name: canary-prov-cp-1}
  status:
    nodeRef: {name: canary-prov-cp-1}
    conditions:
    - {type: Reconciled, status: Unknown, reason: Waiting, lastTransitionTime: '2026-11-28T07:00:00Z', message: 'error applying plan'}
- apiVersion: v1
  kind: Secret
  type: rke.cattle.io/machine-plan
  metadata:
    name: canary-prov-cp-1-machine-plan
    namespace: fleet-default
    labels: {rke.cattle.io/machine-name: canary-prov-cp-1, rke.cattle.io/cluster-name: canary-prov}
    annotations:
      rke.cattle.io/drain-error: 'error when evicting pods/"x-0" -n "shop": password=` + c.v("drain-error annotation") + `'
      rke.cattle.io/join-url: 'https://canary:` + c.v("join-url annotation") + `@10.0.0.1:9345'
  data:
    plan: ` + b64(plan) + `
    appliedPlan: ` + b64(applied) + `
    failed-checksum: ` + b64(sha256Hex(plan)) + `
    failure-count: ` + b64("3") + `
    failed-output: ` + gzipB64(t, failed) + `
    probe-statuses: ` + b64(`{"kubelet":{"healthy":true,"successCount":1}}`) + `
- apiVersion: v1
  kind: Namespace
  metadata: {name: c-m-canary01}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: provisioning-log, namespace: c-m-canary01}
  data:
    log: "[INFO ] configuring control plane node(s) canary-prov-cp-1\n[ERROR] request failed: Authorization: Bearer ` + c.v("provisioning-log line") + `\n"
- apiVersion: management.cattle.io/v3
  kind: Setting
  metadata: {name: canary-setting}
  value: ` + c.v("value of a Setting unstick does not read") + `
`
	if err := os.MkdirAll(filepath.Join(localDir, "fleet-default"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(localDir, "fleet-default", "rancher-canaries.yaml"), []byte(objects), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// plantFleet puts canaries where Fleet keeps values on the management cluster: a Bundle's
// Helm values and resource contents, a BundleDeployment's options and staged options, a
// Fleet Cluster's agent environment.
func plantFleet(t *testing.T, fleetDir string, c *canaries) {
	t.Helper()
	editDocs(t, filepath.Join(fleetDir, "bundles.yaml"), func(o map[string]any) {
		spec := o["spec"].(map[string]any)
		name := o["metadata"].(map[string]any)["name"].(string)
		helm, _ := spec["helm"].(map[string]any)
		if helm == nil {
			helm = map[string]any{}
			spec["helm"] = helm
		}
		helm["values"] = map[string]any{"global": map[string]any{"cattle": map[string]any{"registryPassword": c.v("Bundle " + name + " helm values")}}}
		spec["resources"] = []any{map[string]any{"name": "secret.yaml", "content": "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\nstringData:\n  token: " + c.v("Bundle "+name+" resource content") + "\n"}}
	})
	editDocs(t, filepath.Join(fleetDir, "bundledeployments.yaml"), func(o map[string]any) {
		spec := o["spec"].(map[string]any)
		name := o["metadata"].(map[string]any)["name"].(string)
		for _, k := range []string{"options", "stagedOptions"} {
			opts, _ := spec[k].(map[string]any)
			if opts == nil {
				opts = map[string]any{}
				spec[k] = opts
			}
			helm, _ := opts["helm"].(map[string]any)
			if helm == nil {
				helm = map[string]any{}
				opts["helm"] = helm
			}
			helm["values"] = map[string]any{"apiKey": c.v("BundleDeployment " + name + " " + k + " helm values")}
		}
	})
	editDocs(t, filepath.Join(fleetDir, "clusters.yaml"), func(o map[string]any) {
		spec := o["spec"].(map[string]any)
		name := o["metadata"].(map[string]any)["name"].(string)
		spec["agentEnvVars"] = []any{map[string]any{"name": "HTTPS_PROXY", "value": "http://fleet:" + c.v("Fleet Cluster "+name+" agentEnvVars") + "@proxy.internal:3128"}}
	})
}

// plantHelmFile puts canaries in every release record of a file of Helm release Secrets, in
// Helm's own storage encoding: the values (config), the chart's default values, the manifest
// and the description (which Helm fills with error text).
func plantHelmFile(t *testing.T, path string, c *canaries) {
	t.Helper()
	n := 0
	editDocs(t, path, func(o map[string]any) {
		if o["type"] != "helm.sh/release.v1" {
			return
		}
		data := o["data"].(map[string]any)
		api, err := base64.StdEncoding.DecodeString(data["release"].(string))
		if err != nil {
			t.Fatal(err)
		}
		gz, err := base64.StdEncoding.DecodeString(string(api))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		var rel map[string]any
		if err := json.Unmarshal(raw, &rel); err != nil {
			t.Fatal(err)
		}
		at := o["metadata"].(map[string]any)["name"].(string)
		rel["config"] = map[string]any{"proxy": map[string]any{"password": c.v("Helm values (config) of " + at)}}
		if ch, ok := rel["chart"].(map[string]any); ok {
			ch["values"] = map[string]any{"bootstrap": map[string]any{"token": c.v("Helm chart values of " + at)}}
		}
		// The manifest's Deployment gets an environment value: a rollback re-applies it.
		manifest, _ := rel["manifest"].(string)
		if i := strings.Index(manifest, "        image: "); i >= 0 {
			eol := strings.Index(manifest[i:], "\n")
			if eol < 0 {
				eol = len(manifest) - i
			}
			line := i + eol
			manifest = manifest[:line] + "\n        env:\n        - name: CATTLE_EXTRA\n          value: " + c.v("Helm manifest of "+at) + manifest[line:]
		} else {
			manifest += "\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: extra}\nstringData: {token: " + c.v("Helm manifest of "+at) + "}\n"
		}
		rel["manifest"] = manifest
		if info, ok := rel["info"].(map[string]any); ok {
			info["description"] = "Upgrade \"fleet-agent\" failed: post-upgrade hooks failed: job login failed: password=" + c.v("Helm description of "+at)
		}
		b, err := json.Marshal(rel)
		if err != nil {
			t.Fatal(err)
		}
		data["release"] = base64.StdEncoding.EncodeToString([]byte(gzipB64(t, string(b))))
		n++
	})
	if n == 0 {
		t.Fatalf("%s: no Helm release Secret to plant in", path)
	}
}

// gzipB64 is base64(gzip(s)), the encoding of Helm release records and of Wrangler's
// objectset.rio.cattle.io/applied annotation.
func gzipB64(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// editDocs rewrites every object of a YAML file (multi-document, Lists included) with edit.
func editDocs(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if items, ok := o["items"].([]any); ok {
			for _, it := range items {
				edit(it.(map[string]any))
			}
		} else {
			edit(o)
		}
		out, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(out))
	}
	if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Secrets stay secret, live: one bundle with canaries planted wherever clusters keep credentials —
// Secrets (opaque data and stringData, a kubeconfig, a docker config), Helm release records
// (values, chart values, manifests, descriptions), environment values and args of the agent's
// Deployment and Pod, a SUC Plan's envs, args and command, ConfigMaps (a kubeconfig, the SUC
// env ConfigMap's non-SUC key), last-applied and objectset-applied annotations, Fleet Bundle
// Helm values and resource contents, BundleDeployment options and staged options, Fleet
// Cluster agentEnvVars, event messages, a termination message, a condition message, and pod
// logs (bearer tokens, --token flags, bare tokens, docker auth, X-API-Auth-Header, R_SESS
// cookies, passwords, URL passwords, kubeconfig tokens, a PEM key). Every output of unstick is
// grepped, through base64 and gzip layers, offline (scan --from in every format, preflight,
// images, the fix plan, explain) and live on real API servers with the logs behind the test
// log proxy: scan in every format (stdout and --output-file) and its -vv log, explain, images,
// preflight, collect (every file of the archive) and scan --from of it, the fix plan (text and
// JSON), fix --apply (every file of the backup directory), and serve's /metrics, / and
// /api/v1/findings. The only files allowed to hold a canary are the backups fix keeps under
// objects/ so that restore can put the objects back exactly: they must be 0600 in 0700
// directories, and never appear in evidence or a bundle.
func TestCanarySecretsStaySecret(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	c, dir := plantedBundle(t)
	f := replay(t, dir)
	work := t.TempDir()
	out := func(name string, data []byte) { c.check(t, name, data) }
	base := func(extra ...string) []string {
		return append([]string{"--kubeconfig", f.kubeconfig, "--all-contexts", "-q", "--offline-registry"}, extra...)
	}

	// The planted values reached the servers: the test would see a leak.
	{
		var raw []byte
		for _, env := range f.envs {
			b, _ := json.Marshal(everything(t, env.Config))
			raw = append(raw, b...)
		}
		if got := c.find(raw, 4); len(got) < 30 {
			t.Fatalf("only %d planted places are visible on the server (%v): the test would prove little", len(got), got)
		}
	}

	// scan, every format, to stdout and to --output-file.
	var redactedQuote bool
	for _, format := range report.Formats {
		stdout, stderr, code := run(t, append([]string{"scan"}, base("--now", f.now, "-o", format)...)...)
		if code != 3 {
			t.Errorf("scan -o %s: exit %d, want 3 (findings)\n%s", format, code, stderr)
		}
		if len(stdout) == 0 {
			t.Errorf("scan -o %s wrote nothing", format)
		}
		out("scan -o "+format+" (stdout)", []byte(stdout))
		out("scan -o "+format+" (stderr)", []byte(stderr))
		if format == "json" {
			redactedQuote = strings.Contains(stdout, "[redacted]") && strings.Contains(stdout, "canary-sync-7f9c8-x2k4p")
		}
		file := filepath.Join(work, "report."+format)
		_, stderr, _ = run(t, append([]string{"scan"}, base("--now", f.now, "-o", format, "--output-file", file)...)...)
		b, err := os.ReadFile(file)
		if err != nil || len(b) == 0 {
			t.Errorf("scan -o %s --output-file: %v (%d bytes)", format, err, len(b))
		}
		out("scan -o "+format+" --output-file "+filepath.Base(file), b)
		out("scan -o "+format+" --output-file (stderr)", []byte(stderr))
	}
	if !redactedQuote {
		t.Error("scan -o json quotes no redacted log line of the crash-looping pod: the log path was not exercised")
	}
	// -vv: unstick's own diagnostics.
	stdout, stderr, _ := run(t, "scan", "--kubeconfig", f.kubeconfig, "--all-contexts", "--offline-registry", "--now", f.now, "-o", "json", "-vv")
	if !strings.Contains(stderr, "debug") && !strings.Contains(stderr, "info") {
		t.Errorf("scan -vv logged nothing on stderr:\n%s", stderr)
	}
	out("scan -vv (stderr)", []byte(stderr))
	out("scan -vv (stdout)", []byte(stdout))

	// explain, images, preflight.
	for _, args := range [][]string{
		{"explain", "helm/release-pending"},
		{"explain", "pod/crashloop"},
		append([]string{"images"}, base("-o", "json")...),
		append([]string{"images"}, base("-o", "csv")...),
		append([]string{"preflight"}, base("--now", f.now)...),
		append([]string{"preflight"}, base("--now", f.now, "-o", "json")...),
	} {
		stdout, stderr, code := run(t, args...)
		if code == 1 || code == 2 || stdout == "" {
			t.Errorf("%s: exit %d\n%s", strings.Join(args[:1], " "), code, stderr)
		}
		name := args[0] + " " + strings.Join(args[len(args)-2:], " ")
		out(name+" (stdout)", []byte(stdout))
		out(name+" (stderr)", []byte(stderr))
	}

	// collect: redacts by default and says what; every file of the archive is clean.
	bundle := filepath.Join(work, "collected.tar.gz")
	stdout, stderr, code := run(t, "collect", "--kubeconfig", f.kubeconfig, "--all-contexts", "--to", bundle, "-q")
	if code != 0 {
		t.Fatalf("collect exit %d: %s", code, stderr)
	}
	out("collect (stdout)", []byte(stdout))
	out("collect (stderr)", []byte(stderr))
	// (Secrets other than Helm release storage are never read: scan lists Secrets by owner=helm.)
	for _, want := range []string{"redacted", "ConfigMap values", "environment values", "fields outside the allowlist", "Helm release payloads reduced to their metadata", "log lines with credentials", "free-text values with credentials"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("collect does not say it redacted %q: %s", want, stderr)
		}
	}
	files := untar(t, bundle)
	if len(files) < 5 {
		t.Fatalf("the bundle has %d files", len(files))
	}
	var names []string
	for name, b := range files {
		names = append(names, name)
		out("collect bundle file "+name, b)
	}
	sort.Strings(names)
	meta := string(files["unstick-bundle.yaml"])
	if !strings.Contains(meta, "redacted:") || !strings.Contains(meta, "environment values") || !strings.Contains(meta, "log lines with credentials") {
		t.Errorf("the bundle metadata does not list what was redacted:\n%s", meta)
	}
	joined := ""
	for _, n := range names {
		joined += n + "\n" + string(files[n])
	}
	for _, want := range []string{"canary-sync-7f9c8-x2k4p/sync.previous.log", "sh.helm.release.v1." + agentRelease + ".v4", "canary-config", "default-controller-env", "SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE", "[redacted]"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the bundle lacks %q: the planted objects were not collected (files: %v)", want, names)
		}
	}
	stdout, stderr, code = run(t, "scan", "--from", bundle, "--now", f.now, "-o", "json")
	if code != 3 {
		t.Errorf("scan --from the collected bundle: exit %d\n%s", code, stderr)
	}
	// Redaction takes nothing a check needs: the bundle scans as the live cluster does.
	liveOut, liveErr, _ := run(t, append([]string{"scan"}, base("--now", f.now, "-o", "json")...)...)
	if d := diff(parse(t, liveOut, liveErr).keys(), parse(t, stdout, stderr).keys()); d != "" {
		t.Errorf("the redacted bundle scans differently from the live cluster (- live only, + bundle only):\n%s", d)
	}
	out("scan --from the collected bundle (stdout)", []byte(stdout))
	out("scan --from the collected bundle (stderr)", []byte(stderr))
	stdout, _, _ = run(t, "scan", "--from", bundle, "--now", f.now)
	out("scan --from the collected bundle -o table", []byte(stdout))

	// The fix plan, as text and JSON.
	fixArgs := func(extra ...string) []string {
		return append([]string{"fix"}, f.args(append([]string{"--only", "helm/"}, extra...)...)...)
	}
	for _, format := range []string{"table", "json"} {
		stdout, stderr, code := runCtx(context.Background(), t, "", fixArgs("-o", format)...)
		if code != 3 || !strings.Contains(stdout, "rollback") { // 3: a printed plan leaves its incident open
			t.Errorf("fix -o %s: exit %d, no rollback in the plan\n%s%s", format, code, stdout, stderr)
		}
		out("fix -o "+format+" (stdout)", []byte(stdout))
		out("fix -o "+format+" (stderr)", []byte(stderr))
	}

	// fix --apply: the rollback of the agent's pending release.
	backup := filepath.Join(work, "backup")
	stdout, stderr, code = runCtx(context.Background(), t, "", fixArgs("--apply", "--yes", "--max-risk", "medium", "--backup-dir", backup, "--verify-timeout", "20s")...)
	if code != 0 {
		t.Fatalf("fix --apply exit %d\n%s\n%s", code, stdout, stderr)
	}
	out("fix --apply (stdout)", []byte(stdout))
	out("fix --apply (stderr)", []byte(stderr))
	stdout, stderr, _ = runCtx(context.Background(), t, "", fixArgs("--apply", "--yes", "--max-risk", "medium", "--backup-dir", backup, "-o", "json")...)
	out("fix --apply -o json, rerun (stdout)", []byte(stdout))
	out("fix --apply -o json, rerun (stderr)", []byte(stderr))
	byDesign := checkBackupDir(t, c, backup)
	if len(byDesign) == 0 {
		t.Error("no backup holds a planted value: the Helm release Secrets and the Deployment the rollback rewrote must be backed up in full for restore")
	}
	t.Logf("backups that hold secrets by design (restore needs them; all 0600, none in evidence): %v", byDesign)

	// serve: the dashboard, the findings and the metrics.
	serveOutputs(t, f.kubeconfig, func(name string, b []byte) { out(name, b) }, "--all-contexts")
}

// plantedBundle is the bundle with its canaries, and how many there are.
func plantedBundle(t *testing.T) (*canaries, string) {
	t.Helper()
	c := newCanaries(t)
	dir := secretsBundle(t, c)
	if planted := len(c.where); planted < 40 {
		t.Fatalf("only %d canaries planted", planted)
	} else {
		t.Logf("%d distinct canaries planted", planted)
	}
	return c, dir
}

// The same bundle, offline: the loaders and the reports alone, no API server.
func TestCanarySecretsStaySecretOffline(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	c, dir := plantedBundle(t)
	// The canaries are in the bundle as written: a clean output means something.
	var all []byte
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			all = append(all, b...)
		}
		return nil
	})
	found := map[string]bool{}
	for _, p := range c.find(all, 4) {
		found[p] = true
	}
	var missing []string
	for _, place := range c.where {
		if !found[place] {
			missing = append(missing, place)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Fatalf("%d canaries are not findable in the bundle as written: %s", len(missing), strings.Join(missing, "; "))
	}
	offlineOutputs(t, c, dir)
}

// offlineOutputs greps every output of the verbs that read an offline bundle, on the bundle
// with the canaries as planted (no collect in between: the loaders and the reports alone).
func offlineOutputs(t *testing.T, c *canaries, dir string) {
	t.Helper()
	var quoted bool
	for _, format := range report.Formats {
		stdout, stderr, code := run(t, "scan", "--from", dir, "--now", now, "-o", format)
		if code != 3 || stdout == "" {
			t.Errorf("scan --from -o %s: exit %d, want 3 (findings)\n%s", format, code, stderr)
		}
		c.check(t, "scan --from -o "+format+" (stdout)", []byte(stdout))
		c.check(t, "scan --from -o "+format+" (stderr)", []byte(stderr))
		if format == "json" {
			quoted = strings.Contains(stdout, "[redacted]") && strings.Contains(stdout, "canary-sync-7f9c8-x2k4p")
		}
	}
	if !quoted {
		t.Error("scan --from -o json quotes nothing redacted about the crash-looping pod: the log and event paths were not exercised")
	}
	for _, args := range [][]string{
		{"preflight", "--from", dir, "--now", now, "--offline-registry"},
		{"preflight", "--from", dir, "--now", now, "--offline-registry", "-o", "json"},
		{"images", "--from", dir, "--offline-registry", "-o", "json"},
		{"images", "--from", dir, "--offline-registry", "-o", "csv"},
		{"fix", "--from", dir, "--now", now, "--offline-registry"},
		{"fix", "--from", dir, "--now", now, "--offline-registry", "-o", "json"},
		{"explain", "pod/crashloop"},
	} {
		stdout, stderr, code := run(t, args...)
		if code == 1 || code == 2 || stdout == "" {
			t.Errorf("%s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
		name := args[0] + " --from " + strings.Join(args[len(args)-2:], " ")
		c.check(t, name+" (stdout)", []byte(stdout))
		c.check(t, name+" (stderr)", []byte(stderr))
	}
}

// checkBackupDir greps every file fix wrote. Only object backups (objects/<cluster>/...) may
// hold a secret, for restore: each such file must be 0600 in 0700 directories. The journal, the
// object index and every evidence file must be clean. It returns the backups holding secrets.
func checkBackupDir(t *testing.T, c *canaries, dir string) []string {
	t.Helper()
	var byDesign []string
	evidence := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			if info.Mode().Perm() != 0o700 {
				t.Errorf("backup directory %s is %v, want 0700", rel, info.Mode().Perm())
			}
			return nil
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("backup file %s is %v, want 0600", rel, info.Mode().Perm())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, "evidence/") {
			evidence++
		}
		places := c.find(b, 4)
		if len(places) == 0 {
			return nil
		}
		restorable := strings.HasPrefix(rel, "objects/") && rel != "objects/index.jsonl"
		if !restorable {
			sort.Strings(places)
			t.Errorf("fix backup directory file %s leaks the secret planted in: %s", rel, strings.Join(places, "; "))
			return nil
		}
		byDesign = append(byDesign, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if evidence == 0 {
		t.Error("fix saved no evidence: the evidence path was not exercised")
	}
	// Evidence logs were read through the log proxy and must show the redaction.
	logs, _ := filepath.Glob(filepath.Join(dir, "evidence", "*", "*", "*", "logs", "*", "*", "*.log"))
	red := false
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		red = red || bytes.Contains(b, []byte("[redacted]"))
	}
	if !red {
		t.Errorf("no evidence log shows a redaction (logs: %v): the agent's log was not saved", logs)
	}
	return byDesign
}

func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = b
	}
	return out
}

// freePort returns a loopback address nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// runServe runs `unstick serve` with args until the test ends and returns its address, once
// /readyz answers 200, and its stderr.
func runServe(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	addr, errOut, _ := runServeStoppable(t, args...)
	return addr, errOut
}

// runServeStoppable is runServe that also returns stop, which ends serve before the test does and
// waits for it to exit.
func runServeStoppable(t *testing.T, args ...string) (string, *syncBuffer, func()) {
	t.Helper()
	addr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	errOut := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		// --authn=off: the tests read serve without a token even when they run in a pod;
		// args can turn it on.
		done <- runServeCLI(ctx, errOut, append([]string{"serve", "--listen", addr, "--debounce", "100ms", "--authn", "off"}, args...))
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Error("serve did not stop within 15s of its context ending")
			}
		})
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d before it was ready:\n%s", code, errOut.String())
		default:
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr, errOut, stop
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready after 90s:\n%s", errOut.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func httpGet(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", url, resp.StatusCode, b)
	}
	return b
}

// serveOutputs runs serve on the kubeconfig and hands every endpoint's body to check.
func serveOutputs(t *testing.T, kubeconfig string, check func(string, []byte), extra ...string) {
	t.Helper()
	addr, errOut := runServe(t, append([]string{"--kubeconfig", kubeconfig, "-v"}, extra...)...)
	findings := httpGet(t, "http://"+addr+"/api/v1/findings")
	if !bytes.Contains(findings, []byte("pod/crashloop")) || !bytes.Contains(findings, []byte("canary-sync-7f9c8-x2k4p")) {
		t.Errorf("serve's findings lack the crash-looping pod:\n%s", findings)
	}
	check("serve /api/v1/findings", findings)
	check("serve /metrics", httpGet(t, "http://"+addr+"/metrics"))
	check("serve / (dashboard)", httpGet(t, "http://"+addr+"/"))
	check("serve (stderr)", []byte(errOut.String()))
}

// The Rancher token of --rancher and --rancher-url is a secret like the planted ones: the
// fleet of the canary bundle, read through the Rancher stand-in (rancher_proxy_test.go) with a
// canary token, prints it nowhere — not in reports, errors, logs, bundles, plans or serve's
// endpoints — and neither does a refused token.
func TestCanaryRancherTokenStaysSecret(t *testing.T) {
	c, dir := plantedBundle(t)
	f := replay(t, dir)
	out := func(name string, data []byte) { c.check(t, name, data) }
	token := "token-canary:" + c.v("Rancher API token")
	standIn := testenv.NewRancherStandIn()
	t.Cleanup(standIn.Close)
	ids := map[string]string{"local": "local", "prod-eu-1": "c-m-canary01"}
	mgmt := map[string]string{}
	for name, env := range f.envs {
		id, ok := ids[name]
		if !ok {
			t.Fatalf("the canary fleet has a cluster %s the test gives no Rancher ID", name)
		}
		logs := filepath.Join(t.TempDir(), "logs")
		if _, err := testenv.CopyLogs(dir, name, logs); err != nil {
			t.Fatal(err)
		}
		h, err := testenv.LogProxy(env.Config, logs)
		if err != nil {
			t.Fatal(err)
		}
		standIn.AddCluster(id, h)
		standIn.Allow(token, id)
		mgmt[id] = name
	}
	local := f.envs["local"].Config
	if err := testenv.InstallCRDs(t.Context(), local, testenv.RancherManagementClusterCRD()); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(local)
	if err != nil {
		t.Fatal(err)
	}
	for id, name := range mgmt {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "management.cattle.io/v3", "kind": "Cluster",
			"metadata": map[string]any{"name": id}, "spec": map[string]any{"displayName": name}}}
		if _, err := dyn.Resource(schema.GroupVersionResource{Group: "management.cattle.io", Version: "v3", Resource: "clusters"}).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["rancher"] = &clientcmdapi.Cluster{Server: standIn.URL(), CertificateAuthorityData: standIn.CAData()}
	kc.AuthInfos["rancher"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["rancher"] = &clientcmdapi.Context{Cluster: "rancher", AuthInfo: "rancher"}
	kc.CurrentContext = "rancher"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	rancher := func(extra ...string) []string {
		return append([]string{"--kubeconfig", kubeconfig, "--rancher", "--offline-registry", "--now", f.now}, extra...)
	}

	for _, format := range []string{"json", "table", "html"} {
		stdout, stderr, code := run(t, append([]string{"scan"}, rancher("-o", format, "-vv")...)...)
		if code != 3 {
			t.Errorf("scan --rancher -o %s: exit %d, want 3\n%s", format, code, stderr)
		}
		out("scan --rancher -o "+format+" (stdout)", []byte(stdout))
		out("scan --rancher -o "+format+" -vv (stderr)", []byte(stderr))
	}
	for _, args := range [][]string{
		append([]string{"preflight"}, rancher("-o", "json")...),
		append([]string{"fix"}, rancher("--only", "helm/", "-o", "json")...),
		append([]string{"fix"}, rancher("--only", "helm/")...),
	} {
		stdout, stderr, code := run(t, args...)
		if code == 1 || code == 2 || stdout == "" {
			t.Errorf("%s --rancher: exit %d\n%s", args[0], code, stderr)
		}
		out(args[0]+" --rancher (stdout)", []byte(stdout))
		out(args[0]+" --rancher (stderr)", []byte(stderr))
	}
	bundle := filepath.Join(t.TempDir(), "collected.tar.gz")
	stdout, stderr, code := run(t, "collect", "--kubeconfig", kubeconfig, "--rancher", "--to", bundle, "-q")
	if code != 0 {
		t.Fatalf("collect --rancher exit %d: %s", code, stderr)
	}
	out("collect --rancher (stdout)", []byte(stdout))
	out("collect --rancher (stderr)", []byte(stderr))
	for name, b := range untar(t, bundle) {
		out("collect --rancher bundle file "+name, b)
	}

	// --rancher-url: the token from the environment; then a refused one.
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, standIn.CAData(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RANCHER_TOKEN", token)
	stdout, stderr, code = run(t, "scan", "--rancher-url", standIn.URL(), "--certificate-authority", ca, "--offline-registry", "--now", f.now, "-o", "json", "-vv")
	if code != 3 {
		t.Errorf("scan --rancher-url: exit %d, want 3\n%s", code, stderr)
	}
	out("scan --rancher-url (stdout)", []byte(stdout))
	out("scan --rancher-url -vv (stderr)", []byte(stderr))
	t.Setenv("RANCHER_TOKEN", "token-wrong:"+c.v("refused Rancher API token"))
	stdout, stderr, code = run(t, "scan", "--rancher-url", standIn.URL(), "--certificate-authority", ca, "-vv")
	if code != 1 || !strings.Contains(stderr, "401") {
		t.Errorf("scan --rancher-url with a wrong token: exit %d, want 1 naming the 401\n%s", code, stderr)
	}
	out("scan --rancher-url, refused (stdout)", []byte(stdout))
	out("scan --rancher-url, refused -vv (stderr)", []byte(stderr))

	serveOutputs(t, kubeconfig, func(name string, b []byte) { out("--rancher "+name, b) }, "--rancher")
}
