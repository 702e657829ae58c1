package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/unstick-dev/unstick/internal/testbed"
	"github.com/unstick-dev/unstick/internal/testenv"
)

const (
	sucSecretPlan = "os-hardening"
	sucSecretName = "os-hardening-script"
	sucSAPlan     = "k3s-agent"
	sucMissingSA  = "system-upgrade-agent"
)

// TestRealSUCPlanInvalid runs the real system-upgrade-controller v0.20.1 with kube-apiserver,
// kube-controller-manager and kube-scheduler v1.37.2 (KWOK as the kubelets, its default stages
// running every pod to completion) and two Plans it will not carry out:
//
//   - os-hardening names in spec.secrets a Secret that does not exist: SUC sets Validated=False
//     with `secret "os-hardening-script" not found` and creates no Job;
//   - k3s-agent names a ServiceAccount that does not exist, which SUC does not validate: it
//     creates the Job, whose pods the ServiceAccount admission plugin refuses (the Job
//     controller's FailedCreate events).
//
// unstick names suc/plan-invalid as the root cause of each. Then the Secret and the
// ServiceAccount are created: SUC validates the Plan, the Jobs run, both Plans complete.
// It regenerates testdata/scenarios/suc/plan-invalid-bed-* and runs only when
// UNSTICK_COLLECT_REAL is set.
func TestRealSUCPlanInvalid(t *testing.T) {
	if os.Getenv("UNSTICK_COLLECT_REAL") == "" {
		t.Skip("regenerates the suc/plan-invalid-bed scenarios; set UNSTICK_COLLECT_REAL=1")
	}
	ctx := t.Context()
	began := time.Now()
	nodes := []testbed.Node{
		{Name: "cp-1", Labels: map[string]string{"node-role.kubernetes.io/control-plane": "true", "node-role.kubernetes.io/master": "true"}},
		{Name: "worker-1", Labels: map[string]string{"node-role.kubernetes.io/worker": "true"}},
	}
	// envtest's API server runs without the ServiceAccount admission plugin (it disables it by
	// default); every real cluster runs it, and it is what refuses the pods of a Job whose
	// ServiceAccount is missing.
	withSA := testenv.WithAPIServerArg("disable-admission-plugins", "")
	bed := testbed.Start(t, testbed.Options{Name: "suc-edge", Nodes: nodes, EnvOptions: []testenv.Option{withSA}})
	settings := testbed.SUCSettings("rancher/kubectl:" + testenv.KubernetesVersion)
	settings["SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS"] = "900" // upstream's: the Job outlives the test
	suc := bed.StartSUC(t, settings)
	dyn, err := dynamic.NewForConfig(bed.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{secretPlan(), saPlan()} {
		if _, err := dyn.Resource(planGVR).Namespace("system-upgrade").Create(ctx, unstructuredOf(t, doc), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var validated, refused string
	sucWaitUntil(t, 3*time.Minute, "os-hardening Validated=False and k3s-agent's Job refused its pods", func() (bool, string) {
		validated = planCondition(t, dyn, sucSecretPlan, "Validated", "False")
		refused = sucEvent(t, bed, "FailedCreate", "serviceaccount")
		return validated != "" && refused != "", fmt.Sprintf("validated %q, refused %q\n%s", validated, refused, suc.Log())
	})
	time.Sleep(5 * time.Second)
	t.Logf("bed and failures in %s: %q; %q", time.Since(began).Round(time.Second), validated, refused)
	what := fmt.Sprintf("Plan %s names in spec.secrets the Secret %s, which does not exist: SUC set `Validated=False` with the message `%s` and created no Job. Plan %s names the ServiceAccount %s, which does not exist and which SUC does not check: it created the Job, and kube-controller-manager's Job controller was refused every pod: `%s`.",
		sucSecretPlan, sucSecretName, validated, sucSAPlan, sucMissingSA, refused)
	dir := collectState(t, bed.Kubeconfig, "suc", "plan-invalid-bed-positive")
	// Judged two hours later: past suc.planStuckAfter, so the Plans' suc/plan-stuck is due and
	// must be the invalid Plan's symptom, not a cause of its own.
	now := writeStateExpectAt(t, dir, "TestRealSUCPlanInvalid", what, "rootCauses: [suc/plan-invalid]\nforbid: [suc/kubectl-skew]\n", 2*time.Hour)
	stateScanRoots(t, dir, now, "suc/plan-invalid", sucSecretName)
	stateScanRoots(t, dir, now, "suc/plan-invalid", sucMissingSA)
	stateInvalidPlansAreRoots(t, dir, now)

	if _, err := bed.Client.CoreV1().Secrets("system-upgrade").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: sucSecretName, Namespace: "system-upgrade"},
		StringData: map[string]string{"harden.sh": "#!/bin/sh\nsysctl -w kernel.kptr_restrict=2\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := bed.Client.CoreV1().ServiceAccounts("system-upgrade").Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: sucMissingSA, Namespace: "system-upgrade"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sucWaitUntil(t, 4*time.Minute, "both Plans Complete", func() (bool, string) {
		a := planCondition(t, dyn, sucSecretPlan, "Complete", "True")
		b := planCondition(t, dyn, sucSAPlan, "Complete", "True")
		return a != "" && b != "", fmt.Sprintf("%s: %s\n%s: %s", sucSecretPlan, planStatusJSON(t, dyn, sucSecretPlan), sucSAPlan, planStatusJSON(t, dyn, sucSAPlan))
	})
	// What KWOK does not play (the stand-in): the k3s upgrade Job replaces k3s and the node's
	// kubelet comes back at the Plan's version.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := bed.Client.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.NodeInfo.KubeletVersion = "v1.33.6+k3s1"
		_, err = bed.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	what = fmt.Sprintf("The same bed after the Secret %s and the ServiceAccount %s were created: SUC validated %s, both Plans' Jobs ran and both Plans are Complete; worker-1's kubelet set to the k3s Plan's version by the test (KWOK does not restart a kubelet). The Job of %s keeps the refusals of its first minute among its events.", sucSecretName, sucMissingSA, sucSecretPlan, sucSAPlan)
	dir = collectState(t, bed.Kubeconfig, "suc", "plan-invalid-bed-healthy")
	now = writeStateExpectAt(t, dir, "TestRealSUCPlanInvalid", what, "forbid: [suc/plan-invalid, suc/plan-stuck, suc/rbac, suc/node-label-blocks-rerun]\n", 2*time.Hour)
	stateScanForbids(t, dir, now, "suc/plan-invalid", "suc/plan-stuck", "suc/rbac", "suc/node-label-blocks-rerun")
	t.Logf("wall time %s", time.Since(began).Round(time.Second))
}

func secretPlan() string {
	return `apiVersion: upgrade.cattle.io/v1
kind: Plan
metadata: {name: ` + sucSecretPlan + `, namespace: system-upgrade}
spec:
  concurrency: 1
  nodeSelector:
    matchLabels: {node-role.kubernetes.io/worker: "true"}
  serviceAccountName: system-upgrade
  secrets:
  - name: ` + sucSecretName + `
    path: /host/run/system-upgrade/secrets/` + sucSecretName + `
  version: v2.4.0
  upgrade:
    image: registry.example.com/platform/os-hardening
    command: [chroot, /host]
    args: [sh, /run/system-upgrade/secrets/` + sucSecretName + `/harden.sh]
`
}

func saPlan() string {
	return `apiVersion: upgrade.cattle.io/v1
kind: Plan
metadata: {name: ` + sucSAPlan + `, namespace: system-upgrade}
spec:
  concurrency: 1
  nodeSelector:
    matchLabels: {node-role.kubernetes.io/worker: "true"}
  serviceAccountName: ` + sucMissingSA + `
  version: v1.33.6+k3s1
  upgrade:
    image: rancher/k3s-upgrade
`
}

// planCondition is "reason: message" of the Plan's condition typ when it has status, else "".
func planCondition(t *testing.T, dyn dynamic.Interface, name, typ, status string) string {
	u, err := dyn.Resource(planGVR).Namespace("system-upgrade").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == status {
			if msg, _ := m["message"].(string); msg != "" {
				return msg
			}
			return fmt.Sprint(m["reason"])
		}
	}
	return ""
}

func planStatusJSON(t *testing.T, dyn dynamic.Interface, name string) string {
	u, err := dyn.Resource(planGVR).Namespace("system-upgrade").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	b, _ := json.Marshal(u.Object["status"])
	return string(b)
}

func sucEvent(t *testing.T, bed *testbed.Bed, reason, substr string) string {
	l, err := bed.Client.CoreV1().Events("system-upgrade").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for _, e := range l.Items {
		if e.Reason == reason && strings.Contains(e.Message, substr) {
			return e.Message
		}
	}
	return ""
}

// stateInvalidPlansAreRoots wants every suc/plan-stuck of the bundle to sit in an incident
// whose root cause is suc/plan-invalid.
func stateInvalidPlansAreRoots(t *testing.T, dir, now string) {
	t.Helper()
	out, errOut, _ := run(t, "scan", "--from", dir, "-o", "json", "-q", "--now", now)
	s := parse(t, out, errOut)
	for _, root := range s.rootCauses() {
		if root == "suc/plan-stuck" || root == "suc/kubectl-skew" {
			t.Errorf("%s: %s is a root cause of its own; the invalid Plan is the cause\n%s", dir, root, out)
		}
	}
}
