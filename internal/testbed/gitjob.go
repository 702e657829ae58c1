package testbed

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FleetImage is the image of the fleet chart's controller and gitjob Deployments; the gitjob
// controller writes it into the Jobs it creates (--gitjob-image). KWOK runs their pods
// without pulling it.
const FleetImage = "rancher/fleet:v0.16.0"

// StartGitJob runs Fleet's gitjob controller beside the Fleet controller, as the fleet
// chart's gitjob Deployment runs it: `fleetcontroller gitjob --gitjob-image …` in
// cattle-fleet-system. It watches GitRepos, resolves each repository's HEAD with go-git's
// ls-remote inside its own process (every pollingInterval), records the result in the
// GitRepo's status, conditions and events, and creates the gitjob Job that clones and runs
// `fleet apply`. The ls-remote is real — a repository the test serves on the loopback is
// read or refused as a Git server would — and so is the Job's creation (quotas, admission);
// the Job's pod is KWOK's, completed without running, so no Bundle is written by it.
// Opt-in: a test that does not need GitRepos does not start it.
func (f *Fleet) StartGitJob(t T) *Proc {
	t.Helper()
	if err := f.ensureControllerDeployment(t.Context()); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	env := append(fleetProcessEnv(f.Bed.kubeconfigDirect()), "GITOPS_METRICS_BIND_ADDRESS=0")
	f.GitJob = f.Bed.Run(t, "fleet-gitjob", f.bins["fleetcontroller"], []string{
		"gitjob",
		"--gitjob-image", FleetImage,
		"--disable-metrics",
		// Its webhook receiver: a port of the loopback the kernel picks, so beds side by side
		// do not meet on the default :8080.
		"--listen", "127.0.0.1:0",
	}, env)
	return f.GitJob
}

// ensureControllerDeployment creates the fleet-controller Deployment (and its
// ServiceAccount) and the known-hosts ConfigMap as the fleet chart does: the gitjob
// controller reads the Deployment to give its Jobs the controller's tolerations, node
// selector and image pull secrets, and creates no Job without either. The controller itself runs as the bed's process; KWOK runs this pod.
func (f *Fleet) ensureControllerDeployment(ctx context.Context) error {
	c := f.Bed.Client
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "fleet-controller"}}
	if _, err := c.CoreV1().ServiceAccounts(FleetSystemNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the fleet-controller ServiceAccount: %w", err)
	}
	if _, err := c.AppsV1().Deployments(FleetSystemNamespace).Create(ctx, fleetControllerDeployment(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the fleet-controller Deployment: %w", err)
	}
	kh := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "known-hosts"}, Data: map[string]string{"known_hosts": knownHosts}}
	if _, err := c.CoreV1().ConfigMaps(FleetSystemNamespace).Create(ctx, kh, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the known-hosts ConfigMap: %w", err)
	}
	return nil
}

// knownHosts is part of what the fleet chart's known-hosts ConfigMap holds (the public Git
// hosts' published keys): the gitjob controller refuses to create a Job without the ConfigMap
// ("this Fleet deployment is incomplete") and mounts it into the Job's pod.
const knownHosts = `github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl
gitlab.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAfuCHKVTjquxvt6CM6tdG4SLp1Btn/nOeHHE5UOzRdf
bitbucket.org ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIazEu89wgQZ4bqs3d63QSMzYVa0MuJ2e2gKTKqu+UUO
`

// fleetControllerDeployment is the fleet chart's (v0.16.0 charts/fleet/templates/deployment.yaml)
// with its defaults: one replica, Linux nodes, the cattle.io/os=linux toleration.
func fleetControllerDeployment() *appsv1.Deployment {
	one := int32(1)
	labels := map[string]string{"app": "fleet-controller"}
	container := func(name string, args ...string) corev1.Container {
		return corev1.Container{Name: name, Image: FleetImage, Command: append([]string{"fleetcontroller"}, args...),
			Env: []corev1.EnvVar{{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet-controller", Labels: map[string]string{"app.kubernetes.io/name": "fleet"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "fleet-controller", "fleet.cattle.io/shard-id": "", "fleet.cattle.io/shard-default": "true"}},
				Spec: corev1.PodSpec{
					ServiceAccountName: "fleet-controller",
					Containers:         []corev1.Container{container("fleet-controller"), container("fleet-agentmanagement", "agentmanagement")},
					NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
					Tolerations:        []corev1.Toleration{{Key: "cattle.io/os", Operator: corev1.TolerationOpEqual, Value: "linux", Effect: corev1.TaintEffectNoSchedule}},
				},
			},
		},
	}
}
