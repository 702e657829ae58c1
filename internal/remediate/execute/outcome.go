package execute

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/redact"
	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/textsafe"
)

// quoteLimit bounds a controller's message quoted in a step's outcome.
const quoteLimit = 400

// deployed says whether the BundleDeployment a step answers (Step.Deploys) is Ready at the
// deployment the step brought about, and if not, what it still shows. It only reads.
func (e *Executor) deployed(ctx context.Context, st remediate.Step) (bool, string, error) {
	ref := st.Deploys
	cl, err := e.cluster(ctx, ref.Cluster)
	if err != nil {
		return false, "", err
	}
	o := remediate.Object{Cluster: ref.Cluster, APIVersion: "fleet.cattle.io/v1alpha1", Kind: "BundleDeployment", Namespace: ref.Namespace, Name: ref.Name}
	u, err := cl.read(ctx, o)
	if err != nil {
		return false, "", fmt.Errorf("reading BundleDeployment %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	ok, why := bundleDeployed(u, ref)
	if ok {
		return true, "", nil
	}
	return false, fmt.Sprintf("BundleDeployment %s/%s on %s %s", ref.Namespace, ref.Name, ref.Cluster, why), nil
}

// bundleDeployed judges a BundleDeployment read after a step (nil: absent) against what the
// step must bring about: Ready as Fleet's own summary computes it (fleet.BDState), and no
// condition False or with reason Error — the agent sets appliedDeploymentID even for a failed
// deployment it will not retry, and a failed upgrade leaves Ready=True from the release before.
func bundleDeployed(u *unstructured.Unstructured, ref *remediate.BundleDeploymentRef) (bool, string) {
	if u == nil {
		return false, "does not exist (yet): the Fleet controller has not created it"
	}
	if ref.NewObject && string(u.GetUID()) == ref.UID {
		return false, "is still the object the step deleted (uid " + ref.UID + ")"
	}
	var bd snapshot.BundleDeployment
	if err := decode(u, &bd); err != nil {
		return false, "cannot be read: " + err.Error()
	}
	if ref.NewDeployment && bd.Spec.DeploymentID == ref.DeploymentID {
		return false, "has no new deploymentID yet (still " + ref.DeploymentID + "): the Fleet controller has not deployed the bundle again" + conditionText(&bd)
	}
	state := fleet.BDState(&bd)
	if c := failingCondition(&bd); state == fleet.StateReady && c == "" {
		return true, ""
	}
	return false, "is " + state + conditionText(&bd)
}

// failingCondition names the first condition that is False or carries reason Error, with its
// message ("" when none is).
func failingCondition(bd *snapshot.BundleDeployment) string {
	for _, c := range bd.Status.Conditions {
		if string(c.Status) == "False" || c.Reason == "Error" {
			return fmt.Sprintf("%s=%s: %s", c.Type, c.Status, quote(c.Message))
		}
	}
	return ""
}

// conditionText is what a BundleDeployment still shows: its failing condition, else the first
// resource it reports not ready.
func conditionText(bd *snapshot.BundleDeployment) string {
	if c := failingCondition(bd); c != "" {
		return "; " + c
	}
	for _, n := range bd.Status.NonReadyStatus {
		return fmt.Sprintf("; %s %s/%s not ready: %s", n.Kind, n.Namespace, n.Name, quote(n.Summary.String()))
	}
	return ""
}

// quote makes a controller's message fit one line of output: credentials redacted, control
// characters and line breaks shown, length bounded.
func quote(s string) string {
	return textsafe.Clip(textsafe.Line(redact.String(s)), quoteLimit)
}

// decode reads an object into a typed view (the snapshot's, which the checks judge).
func decode(u *unstructured.Unstructured, into any) error {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}
