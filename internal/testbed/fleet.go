package testbed

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// Fleet's namespaces, as its charts name them.
const (
	// FleetSystemNamespace runs the controller (management) and the agent (downstream).
	FleetSystemNamespace = "cattle-fleet-system"
	// FleetDefaultNamespace holds the registered clusters and the bundles aimed at them.
	FleetDefaultNamespace = "fleet-default"
	// FleetRegistrationNamespace holds the agents' credentials on the management cluster.
	FleetRegistrationNamespace = "cattle-fleet-clusters-system"
)

// Fleet is the real Fleet controller running on a management test bed: fleetcontroller (bundles,
// clusters, targeting) and `fleetcontroller agentmanagement` (registration), as the fleet chart
// runs them in two containers of one pod, here as two processes with the bed's kubeconfig.
type Fleet struct {
	Bed             *Bed
	Controller      *Proc
	AgentManagement *Proc
	// GitJob is the gitjob controller, once StartGitJob ran it.
	GitJob *Proc
	// Client reads and writes Fleet's resources on the management cluster.
	Client client.Client
	bins   map[string]string
}

// FleetScheme knows the core and Fleet types.
func FleetScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = fleetv1.AddToScheme(s)
	return s
}

// StartFleet runs the Fleet controller and its agent management on a management test bed.
//
// Registration needs the ServiceAccount token Secrets of a real cluster (Fleet creates
// `kubernetes.io/service-account-token` Secrets and waits for them to be filled in), which the
// bed's kube-controller-manager leaves out because envtest keeps its signing key in its
// certificate directory: a second kube-controller-manager runs just that controller with it.
func StartFleet(t T, mgmt *Bed) *Fleet {
	t.Helper()
	ctx := t.Context()
	bins, err := testenv.BuildAll(ctx, testenv.Controllers, testenv.KubeControllers)
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	c, err := client.New(mgmt.Config, client.Options{Scheme: FleetScheme()})
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	f := &Fleet{Bed: mgmt, Client: c, bins: bins}
	caFile := filepath.Join(mgmt.Dir, "fleet-root-ca.crt")
	if err := os.WriteFile(caFile, mgmt.Config.CAData, 0o600); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	mgmt.Run(t, "kube-controller-manager-sa-token", bins["kube-controller-manager"], []string{
		"--kubeconfig=" + mgmt.kubeconfigDirect(),
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=serviceaccount-token",
		"--service-account-private-key-file=" + filepath.Join(mgmt.Dir, "pki", "sa-signer.key"),
		"--root-ca-file=" + caFile,
	}, nil)
	for _, ns := range []string{FleetSystemNamespace, FleetDefaultNamespace, FleetRegistrationNamespace} {
		if err := mgmt.EnsureNamespace(ctx, ns); err != nil {
			t.Fatalf("testbed: %v", err)
		}
	}
	// The fleet chart's ConfigMap: the address and CA agents register against.
	cfg := map[string]any{
		"apiServerURL":         mgmt.URL(),
		"apiServerCA":          base64.StdEncoding.EncodeToString(mgmt.Config.CAData),
		"agentCheckinInterval": "15s",
		"agentTLSMode":         "strict",
		"bootstrap":            map[string]any{"localAgentDisabled": true},
	}
	if !strings.HasPrefix(mgmt.URL(), "https://") {
		cfg["apiServerURL"] = "https://" + mgmt.URL()
	}
	data, _ := json.Marshal(cfg)
	if _, err := mgmt.Client.CoreV1().ConfigMaps(FleetSystemNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet-controller"},
		Data:       map[string]string{"config": string(data)},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("testbed: %v", err)
	}
	env := append(fleetProcessEnv(mgmt.kubeconfigDirect()),
		"FLEET_HEALTHPROBE_BIND_ADDRESS=0",
		"FLEET_METRICS_BIND_ADDRESS=0",
	)
	f.Controller = mgmt.Run(t, "fleet-controller", bins["fleetcontroller"], []string{"--disable-metrics"}, env)
	// No local agent: the test bed's downstream clusters register as real ones do.
	f.AgentManagement = mgmt.Run(t, "fleet-agentmanagement", bins["fleetcontroller"], []string{"agentmanagement", "--disable-bootstrap"}, env)
	return f
}

// fleetProcessEnv is what the charts set for every Fleet container, with quick leader
// election so a restarted process leads again within seconds.
func fleetProcessEnv(kubeconfig string) []string {
	return []string{
		"KUBECONFIG=" + kubeconfig,
		"NAMESPACE=" + FleetSystemNamespace,
		"CATTLE_ELECTION_LEASE_DURATION=15s",
		"CATTLE_ELECTION_RENEW_DEADLINE=10s",
		"CATTLE_ELECTION_RETRY_PERIOD=2s",
	}
}

// Agent is a real fleet-agent run as a process for a downstream test bed. The test plays the
// kubelet of its pod: it starts, kills and restarts the process.
type Agent struct {
	Fleet *Fleet
	Bed   *Bed
	Proc  *Proc
	// ClusterName and ClusterNamespace are the Fleet Cluster the registration created on the
	// management cluster (e.g. fleet-default/c-…); Namespace is where its BundleDeployments live.
	ClusterName, ClusterNamespace, Namespace string
}

// AgentOptions configures Register.
type AgentOptions struct {
	// ClientID is the fleet-agent ConfigMap's clientID (the downstream kube-system UID if empty).
	ClientID string
	// Labels become the registered Cluster's labels, for bundles to target.
	Labels map[string]string
}

// Register registers a downstream test bed with Fleet the way the fleet-agent chart installed
// with a ClusterRegistrationToken's values does (agent-initiated registration): a token on the
// management cluster, its values as the agent's fleet-agent-bootstrap Secret and fleet-agent
// ConfigMap downstream, then the agent itself, which creates a ClusterRegistration, waits for
// its credentials and stores them in the fleet-agent Secret. Register returns once the
// management cluster has the Cluster and the agent's credentials are in place.
func (f *Fleet) Register(t T, down *Bed, name string, o AgentOptions) *Agent {
	t.Helper()
	ctx := t.Context()
	tok := &fleetv1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Name: name + "-token", Namespace: FleetDefaultNamespace}}
	if err := f.Client.Create(ctx, tok); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("testbed: creating the registration token: %v", err)
	}
	var values map[string]any
	err := poll(ctx, 90*time.Second, func() (bool, error) {
		s, err := f.Bed.Client.CoreV1().Secrets(FleetDefaultNamespace).Get(ctx, tok.Name, metav1.GetOptions{})
		if err != nil || len(s.Data["values"]) == 0 {
			return false, nil
		}
		return true, yaml.Unmarshal(s.Data["values"], &values)
	})
	if err != nil {
		t.Fatalf("testbed: the registration token's values Secret: %v\n%s\n%s", err, f.Bed.Logs("fleet-agentmanagement"), f.Bed.Logs("kube-controller-manager-sa-token"))
	}
	if err := down.EnsureNamespace(ctx, FleetSystemNamespace); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	// What the fleet-agent chart's secret.yaml and configmap.yaml make of those values.
	boot := map[string][]byte{}
	for _, k := range []string{"systemRegistrationNamespace", "clusterNamespace", "token", "tokenName", "apiServerURL", "apiServerCA"} {
		if v, ok := values[k].(string); ok {
			boot[k] = []byte(v)
		}
	}
	if _, err := down.Client.CoreV1().Secrets(FleetSystemNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet-agent-bootstrap"}, Data: boot,
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("testbed: %v", err)
	}
	agentCfg := map[string]any{"clientID": o.ClientID, "agentTLSMode": "strict"}
	if len(o.Labels) > 0 {
		agentCfg["labels"] = o.Labels
	}
	data, _ := json.Marshal(agentCfg)
	if _, err := down.Client.CoreV1().ConfigMaps(FleetSystemNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet-agent"}, Data: map[string]string{"config": string(data)},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("testbed: %v", err)
	}
	return f.runAgent(t, down)
}

// runAgent starts the fleet-agent process for a downstream bed whose fleet-agent-bootstrap
// Secret and fleet-agent ConfigMap are in place (the pod the fleet-agent Deployment would run)
// and waits until it has registered and stored its credentials in the fleet-agent Secret.
func (f *Fleet) runAgent(t T, down *Bed) *Agent {
	t.Helper()
	ctx := t.Context()
	a := &Agent{Fleet: f, Bed: down}
	a.Proc = down.Run(t, "fleet-agent", f.bins["fleetagent"], nil, append(fleetProcessEnv(down.kubeconfigDirect()),
		// One identity across restarts, as the pod's name is: a restarted agent takes its lease back at once.
		"POD_NAME=fleet-agent-0",
		"HOSTNAME=fleet-agent-0",
		"CHECKIN_INTERVAL=15s",
		"FLEET_AGENT_PPROF_DISABLED=true",
		"FLEET_AGENT_METRICS_BIND_ADDRESS=0",
		"FLEET_AGENT_PROBE_BIND_ADDRESS=0",
	))
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		s, err := down.Client.CoreV1().Secrets(FleetSystemNamespace).Get(ctx, "fleet-agent", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		a.ClusterName, a.ClusterNamespace = string(s.Data["clusterName"]), string(s.Data["clusterNamespace"])
		a.Namespace = string(s.Data["deploymentNamespace"])
		return a.ClusterName != "", nil
	})
	if err != nil {
		t.Fatalf("testbed: the agent did not register: %v\n%s\n%s", err, down.Logs("fleet-agent"), f.Bed.Logs("fleet-agentmanagement"))
	}
	return a
}

// Import registers a downstream bed the way Rancher registers the clusters it manages
// (manager-initiated registration): the downstream kubeconfig in a Secret on the management
// cluster and a Fleet Cluster whose spec.kubeConfigSecret names it. Fleet's agentmanagement
// then deploys the agent itself — the fleet-agent Deployment, ConfigMap and bootstrap Secret
// with a fresh registration token, applied downstream through that kubeconfig — and records
// status.agentDeployedGeneration; only for such clusters does it act on
// spec.redeployAgentGeneration. The agent's pod is KWOK's; the agent itself runs as the bed's
// process, started once its bootstrap Secret is there. Import returns once it has registered.
func (f *Fleet) Import(t T, down *Bed, name string, labels map[string]string) *Agent {
	t.Helper()
	ctx := t.Context()
	kc, err := os.ReadFile(down.kubeconfigDirect())
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	secret := name + "-kubeconfig"
	if _, err := f.Bed.Client.CoreV1().Secrets(FleetDefaultNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secret}, Data: map[string][]byte{"value": kc},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("testbed: %v", err)
	}
	fc := &fleetv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: FleetDefaultNamespace, Labels: labels},
		Spec:       fleetv1.ClusterSpec{KubeConfigSecret: secret, KubeConfigSecretNamespace: FleetDefaultNamespace},
	}
	if err := f.Client.Create(ctx, fc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("testbed: creating Fleet Cluster %s: %v", name, err)
	}
	if err := f.WaitAgentDeployed(ctx, name, 0, 2*time.Minute); err != nil {
		t.Fatalf("testbed: %v\n%s", err, f.Bed.Logs("fleet-agentmanagement"))
	}
	return f.runAgent(t, down)
}

// WaitAgentDeployed waits until agentmanagement has deployed generation gen of the Fleet
// Cluster's agent: it sets status.agentDeployedGeneration once the agent's objects are applied
// downstream.
func (f *Fleet) WaitAgentDeployed(ctx context.Context, name string, gen int64, timeout time.Duration) error {
	var last string
	err := poll(ctx, timeout, func() (bool, error) {
		var fc fleetv1.Cluster
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: FleetDefaultNamespace, Name: name}, &fc); err != nil {
			last = err.Error()
			return false, nil
		}
		if d := fc.Status.AgentDeployedGeneration; d == nil || *d != gen {
			last = fmt.Sprintf("status.agentDeployedGeneration %v, want %d", d, gen)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("Fleet Cluster %s/%s: agent generation %d not deployed: %v (%s)", FleetDefaultNamespace, name, gen, err, last)
	}
	return nil
}

// poll calls cond every 500ms until it is true, fails, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
