package testbed

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// SUC is the real system-upgrade-controller (v0.20.1) running against a bed as a process, set
// up as its upstream manifest deploys it: namespace system-upgrade, service account
// system-upgrade, the ConfigMap default-controller-env its Deployment loads with envFrom, and
// the Deployment itself. The Deployment's pod is placed by the scheduler on a control-plane
// KWOK node and played by KWOK (it is what unstick reads to find the controller and its
// settings, and what a rollout restart restarts); the controller that acts is the process,
// started with that ConfigMap's settings, and restarted with the ConfigMap's current values
// whenever the Deployment's pod template changes (`kubectl rollout restart`).
type SUC struct {
	Namespace string
	bed       *Bed
	bin       string
	t         T
	proc      *Proc
	started   int
}

// SUCName is the controller's name: its Deployment, and the upgrade.cattle.io/controller label
// value of its Jobs.
const SUCName = "system-upgrade-controller"

// SUCSettings are the data of the controller's ConfigMap default-controller-env as the v0.20.1
// manifest ships them, with the kubectl image given and two values a test cannot wait for: Jobs
// run at most 120 s (upstream 900 s) and are retried twice (upstream 99, the controller's own
// default is 2) before they fail.
func SUCSettings(kubectlImage string) map[string]string {
	return map[string]string{
		"SYSTEM_UPGRADE_CONTROLLER_DEBUG":             "false",
		"SYSTEM_UPGRADE_CONTROLLER_THREADS":           "2",
		"SYSTEM_UPGRADE_CONTROLLER_LEADER_ELECT":      "true",
		"SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS":  "120",
		"SYSTEM_UPGRADE_JOB_BACKOFF_LIMIT":            "2",
		"SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY":        "Always",
		"SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE":            kubectlImage,
		"SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE_WINDOWS":    "",
		"SYSTEM_UPGRADE_JOB_PRIVILEGED":               "true",
		"SYSTEM_UPGRADE_JOB_TTL_SECONDS_AFTER_FINISH": "900",
		"SYSTEM_UPGRADE_PLAN_POLLING_INTERVAL":        "15m",
	}
}

// StartSUC deploys the controller's objects with settings (SUCSettings) and runs the
// controller. The bed needs a node labelled node-role.kubernetes.io/control-plane for the
// Deployment's pod.
func (b *Bed) StartSUC(t T, settings map[string]string) *SUC {
	t.Helper()
	bin, err := BuildSUC(t.Context())
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	s := &SUC{Namespace: "system-upgrade", bed: b, bin: bin, t: t}
	// The controller's Jobs use the host network: their pods take their node's address.
	if err := b.EnsureNodeAddresses(t.Context()); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	if err := s.deploy(t.Context(), settings); err != nil {
		t.Fatalf("testbed: deploying the system-upgrade-controller: %v", err)
	}
	if err := s.start(t.Context()); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	go s.follow(t.Context())
	return s
}

func (s *SUC) deploy(ctx context.Context, settings map[string]string) error {
	c := s.bed.Client
	ns := s.Namespace
	create := func(err error) error {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err := create(func() error {
		_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}, metav1.CreateOptions{})
		return err
	}()); err != nil {
		return err
	}
	if err := create(func() error {
		_, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "system-upgrade", Namespace: ns}}, metav1.CreateOptions{})
		return err
	}()); err != nil {
		return err
	}
	if err := create(func() error {
		_, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "system-upgrade"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "system-upgrade", Namespace: ns}},
		}, metav1.CreateOptions{})
		return err
	}()); err != nil {
		return err
	}
	if err := create(func() error {
		_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "default-controller-env", Namespace: ns}, Data: settings}, metav1.CreateOptions{})
		return err
	}()); err != nil {
		return err
	}
	labels := map[string]string{
		"app.kubernetes.io/component":  "controller",
		"app.kubernetes.io/name":       SUCName,
		"upgrade.cattle.io/controller": SUCName,
	}
	one := int32(1)
	nonRoot, user := true, int64(65534)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: SUCName, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"upgrade.cattle.io/controller": SUCName}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "system-upgrade",
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
						NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
							{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.NodeSelectorOpExists},
							{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
						}}},
					}}},
					Tolerations: []corev1.Toleration{
						{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
						{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
						{Key: "node-role.kubernetes.io/etcd", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
					},
					Containers: []corev1.Container{{
						Name:            SUCName,
						Image:           "rancher/system-upgrade-controller:" + testenv.SUCVersion,
						ImagePullPolicy: corev1.PullIfNotPresent,
						SecurityContext: &corev1.SecurityContext{RunAsNonRoot: &nonRoot, RunAsUser: &user, RunAsGroup: &user},
						EnvFrom:         []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "default-controller-env"}}}},
						Env: []corev1.EnvVar{
							{Name: "SYSTEM_UPGRADE_CONTROLLER_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['upgrade.cattle.io/controller']"}}},
							{Name: "SYSTEM_UPGRADE_CONTROLLER_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "SYSTEM_UPGRADE_CONTROLLER_NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
						},
					}},
				},
			},
		},
	}
	return create(func() error {
		_, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		return err
	}())
}

// start runs the controller process with the ConfigMap's current settings and the values the
// Deployment gives it from the downward API.
func (s *SUC) start(ctx context.Context) error {
	cm, err := s.bed.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, "default-controller-env", metav1.GetOptions{})
	if err != nil {
		return err
	}
	var env []string
	for k, v := range cm.Data {
		env = append(env, k+"="+v)
	}
	env = append(env,
		"SYSTEM_UPGRADE_CONTROLLER_NAME="+SUCName,
		"SYSTEM_UPGRADE_CONTROLLER_NAMESPACE="+s.Namespace,
		"SYSTEM_UPGRADE_CONTROLLER_NODE_NAME=cp-1",
		// One replica: a restarted process would otherwise wait for its predecessor's lease.
		"SYSTEM_UPGRADE_CONTROLLER_LEADER_ELECT=false",
	)
	s.started++
	s.proc = s.bed.Run(s.t, fmt.Sprintf("system-upgrade-controller-%d", s.started), s.bin,
		[]string{"--kubeconfig", s.bed.kubeconfigDirect()}, env)
	return nil
}

// follow restarts the process when the Deployment's pod template changes, as the Deployment
// controller replaces the pod.
func (s *SUC) follow(ctx context.Context) {
	last := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		d, err := s.bed.Client.AppsV1().Deployments(s.Namespace).Get(ctx, SUCName, metav1.GetOptions{})
		if err != nil {
			continue
		}
		cur := fmt.Sprint(d.Spec.Template.Annotations, d.Spec.Template.Spec.Containers[0].Env, d.Spec.Template.Spec.Containers[0].EnvFrom)
		if last != "" && cur != last {
			_ = s.proc.Kill()
			_ = s.start(ctx)
		}
		last = cur
	}
}

// Restarts is how many times the controller process was started.
func (s *SUC) Restarts() int { return s.started - 1 }

// Log is the output of the running controller process.
func (s *SUC) Log() string { return s.proc.Log() }

// BuildSUC returns the controller's program, built once per machine (testenv's component
// builder, which puts back its nested pkg/apis module).
func BuildSUC(ctx context.Context) (string, error) {
	bins, err := testenv.Controllers.Build(ctx)
	if err != nil {
		return "", err
	}
	return bins[SUCName], nil
}
