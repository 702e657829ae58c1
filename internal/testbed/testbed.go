// Package testbed runs the real controllers of a cluster around internal/testenv's
// kube-apiserver and etcd: kube-controller-manager and kube-scheduler from the same Kubernetes
// release, and KWOK simulating nodes and the lifecycle of the pods placed on them. The
// system-upgrade-controller and Fleet (suc.go, fleet.go) run on top of it.
//
// KWOK is the one stand-in: it plays the kubelets. Pods on its nodes go Running, Ready and
// Completed through its stages without any image being pulled or container run; a test that
// needs another outcome (an image pull refused, a binary of the wrong architecture) adds a
// stage for it and says so. Everything else — Deployments, ReplicaSets, Jobs, the scheduler's
// placements and refusals, their events and conditions — is produced by Kubernetes itself.
package testbed

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// T is what the test bed's helpers need of a test. *testing.T satisfies it; so does
// hack/testbed's runner, which brings the same set-ups up by hand outside tests.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	Context() context.Context
	TempDir() string
}

// Node is a KWOK node, labelled as a real kubelet labels its node.
type Node struct {
	Name string
	// Arch is kubernetes.io/arch and the node's status.nodeInfo.architecture (amd64 if empty).
	Arch   string
	Labels map[string]string
	Taints []corev1.Taint
	// Capacity; empty means 8 CPUs, 32Gi of memory and 110 pods.
	CPU, Memory, Pods string
	Unschedulable     bool
	// KubeletVersion is status.nodeInfo.kubeletVersion (testenv.KubernetesVersion if empty).
	KubeletVersion string
}

// Options configures Start.
type Options struct {
	// Name names the kubeconfig's context ("testbed" if empty).
	Name  string
	Nodes []Node
	// Stages are extra KWOK Stage documents (YAML). They are given to KWOK before its default
	// stages, so a more specific stage a test adds is matched first.
	Stages [][]byte
	// EnvOptions configure the API server.
	EnvOptions []testenv.Option
}

// Bed is a running test bed.
type Bed struct {
	*testenv.Env
	Client kubernetes.Interface

	mu    sync.Mutex
	procs []*Proc
}

// Start runs kube-apiserver, etcd, kube-controller-manager, kube-scheduler and KWOK for a test,
// creates its nodes and waits until they are Ready, and stops everything when the test ends.
// The first use on a machine builds the programs (minutes); a failure fails the test.
func Start(t testing.TB, o Options) *Bed {
	t.Helper()
	// Build before the API server starts, so its clock does not run during a first build.
	if _, err := Build(t.Context()); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	name := o.Name
	if name == "" {
		name = "testbed"
	}
	env := testenv.Start(t, append(EnvOptions(name), o.EnvOptions...)...)
	b, err := StartOn(t.Context(), env, o)
	if b != nil {
		t.Cleanup(b.Close)
	}
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	return b
}

// EnvOptions configure the test bed's API server and etcd as a kubeadm or RKE2 control plane
// is: etcd sends watch progress notifications every 5 seconds, so the API server's watchers
// get bookmarks and an informer's last-synced resourceVersion keeps moving on a quiet resource
// (kube-controller-manager's storage version migrator waits for its garbage collector's to
// pass the migration's; at etcd's default of 10 minutes a migration of a resource nobody
// writes sits Running that long).
func EnvOptions(name string) []testenv.Option {
	return []testenv.Option{testenv.WithContextName(name), testenv.WithEtcdArg("watch-progress-notify-interval", "5s")}
}

// Build builds (once per machine) the programs Start runs and returns them by name.
func Build(ctx context.Context) (map[string]string, error) {
	return testenv.BuildAll(ctx, testenv.KubeControllers, testenv.Controllers)
}

// StartOn runs the controllers and KWOK against a running API server (a test's, or one
// started by testenv.StartProcess for hack/testbed.sh), creates o.Nodes and waits until they
// are Ready. Close stops what it started; the API server is the caller's. On an error the
// returned Bed, if not nil, still needs Close.
func StartOn(ctx context.Context, env *testenv.Env, o Options) (*Bed, error) {
	bins, err := Build(ctx)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	b := &Bed{Env: env, Client: client}
	if err := b.startControllers(ctx, bins, o.Stages); err != nil {
		return b, err
	}
	for _, n := range o.Nodes {
		if err := b.AddNode(ctx, n); err != nil {
			return b, err
		}
	}
	if err := b.WaitNodesReady(ctx, 90*time.Second); err != nil {
		return b, err
	}
	return b, nil
}

// Close stops every program the bed started, the last started first.
func (b *Bed) Close() {
	b.mu.Lock()
	procs := b.procs
	b.procs = nil
	b.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		_ = procs[i].Stop()
	}
}

func (b *Bed) startControllers(ctx context.Context, bins map[string]string, stages [][]byte) error {
	kc := b.kubeconfigDirect()
	if _, err := b.Spawn("kube-controller-manager", bins["kube-controller-manager"], []string{
		"--kubeconfig=" + kc,
		"--leader-elect=false",
		"--secure-port=0",
		// Every controller a cluster runs by default; the service-account token controller
		// needs the server's signing key, which envtest keeps to itself, and nothing here
		// reads legacy token Secrets.
		"--controllers=*,-serviceaccount-token",
		"--cluster-name=" + b.ContextName,
		// Quicker than a cluster's defaults so a test sees a node go NotReady or a Job's
		// back-off within seconds, not minutes.
		"--node-monitor-grace-period=20s",
		"--node-monitor-period=2s",
		"--concurrent-job-syncs=5",
	}, nil); err != nil {
		return err
	}
	if _, err := b.Spawn("kube-scheduler", bins["kube-scheduler"], []string{
		"--kubeconfig=" + kc,
		"--leader-elect=false",
		"--secure-port=0",
	}, nil); err != nil {
		return err
	}
	cfg, err := kwokConfig(ctx, stages)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(b.Dir, "kwok.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return err
	}
	_, err = b.Spawn("kwok", bins["kwok"], []string{
		"--kubeconfig=" + kc,
		"--config=" + cfgPath,
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
		"--node-lease-duration-seconds=40",
		"--cidr=10.244.0.1/16",
	}, nil)
	return err
}

// kubeconfigDirect is a kubeconfig that talks to the API server itself with administrator
// credentials (a StartProcess environment's Kubeconfig goes through its log proxy).
func (b *Bed) kubeconfigDirect() string {
	if p := filepath.Join(b.Dir, testenv.KubeconfigDirect); fileExists(p) {
		return p
	}
	return b.Kubeconfig
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// kwokNodeAnnotation marks the nodes KWOK plays (KWOK's own convention).
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// AddNode creates a node KWOK then plays. It does not wait for it to be Ready.
func (b *Bed) AddNode(ctx context.Context, n Node) error {
	arch := n.Arch
	if arch == "" {
		arch = "amd64"
	}
	labels := map[string]string{
		"kubernetes.io/arch":      arch,
		"kubernetes.io/os":        "linux",
		"kubernetes.io/hostname":  n.Name,
		"beta.kubernetes.io/arch": arch,
		"beta.kubernetes.io/os":   "linux",
		"type":                    "kwok",
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	qty := func(s, def string) resource.Quantity {
		if s == "" {
			s = def
		}
		return resource.MustParse(s)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    qty(n.CPU, "8"),
		corev1.ResourceMemory: qty(n.Memory, "32Gi"),
		corev1.ResourcePods:   qty(n.Pods, "110"),
	}
	kubelet := n.KubeletVersion
	if kubelet == "" {
		kubelet = testenv.KubernetesVersion
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Labels:      labels,
			Annotations: map[string]string{kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		Spec: corev1.NodeSpec{Taints: n.Taints, Unschedulable: n.Unschedulable},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:            arch,
				OperatingSystem:         "linux",
				KubeletVersion:          kubelet,
				ContainerRuntimeVersion: "containerd://2.1.5-k3s1",
				OSImage:                 "SUSE Linux Enterprise Server 15 SP6",
				KernelVersion:           "6.4.0-150600.23.25-default",
			},
		},
	}
	created, err := b.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s: %w", n.Name, err)
	}
	// Status is a subresource: the create above drops it. KWOK's node-initialize stage fills in
	// conditions and addresses, and keeps what is set here. It may write the node first: then
	// read it again and set ours over its (a 409 otherwise).
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		created.Status.Capacity, created.Status.Allocatable, created.Status.NodeInfo = capacity, capacity, node.Status.NodeInfo
		_, err := b.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if cur, gerr := b.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); gerr == nil {
				created = cur
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("setting the status of node %s: %w", n.Name, err)
	}
	return nil
}

// WaitNodesReady waits until every node reports Ready.
func (b *Bed) WaitNodesReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		nodes, err := b.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		var notReady []string
		if err == nil {
			for _, n := range nodes.Items {
				if !nodeReady(&n) {
					notReady = append(notReady, n.Name)
				}
			}
			if len(notReady) == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			sort.Strings(notReady)
			return fmt.Errorf("nodes not Ready after %s: %s (list error: %v)\n%s", timeout, strings.Join(notReady, ", "), err, b.Logs("kwok"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// EnsureNamespace creates a namespace unless it exists.
func (b *Bed) EnsureNamespace(ctx context.Context, name string) error {
	_, err := b.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// Logs returns the tail of a process's output (kube-controller-manager, kube-scheduler, kwok,
// or a name given to Run), for a failing test's message.
func (b *Bed) Logs(name string) string {
	data, err := os.ReadFile(filepath.Join(b.Dir, name+".log"))
	if err != nil {
		return fmt.Sprintf("(no log of %s: %v)", name, err)
	}
	if len(data) > 8<<10 {
		data = data[len(data)-8<<10:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return fmt.Sprintf("--- %s (tail) ---\n%s", name, data)
}
