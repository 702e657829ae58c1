// Package suc is a typed, pure view of rancher/system-upgrade-controller (SUC) objects: Plans,
// the Jobs the controller generates for them, the node labels it writes and the controller's
// own settings. Field names, labels and defaults follow SUC v0.20.1
// (pkg/apis/upgrade.cattle.io/v1/types.go, pkg/upgrade/job/job.go,
// pkg/upgrade/plan/plan.go, pkg/upgrade/handle_batch.go); the Go module of those types is not
// reachable from this build, so the subset unstick reads is declared here with the same JSON
// names.
package suc

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rancher/wrangler/v3/pkg/genericcondition"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// Group and resource of Plans.
const (
	Group      = "upgrade.cattle.io"
	APIVersion = "upgrade.cattle.io/v1"
	Kind       = "Plan"
	CRDName    = "plans.upgrade.cattle.io"
)

// Labels and annotations SUC writes (pkg/apis/upgrade.cattle.io/constants.go).
const (
	// LabelController is on the controller's pods and on every Job and Job pod it creates; the
	// drain's --pod-selector excludes pods carrying it.
	LabelController = "upgrade.cattle.io/controller"
	LabelNode       = "upgrade.cattle.io/node"
	LabelPlan       = "upgrade.cattle.io/plan"
	LabelVersion    = "upgrade.cattle.io/version"
	LabelExclusive  = "upgrade.cattle.io/exclusive"
	// LabelPlanPrefix + <plan> is set on a node to the Plan's latestHash when the node's Job
	// completes; the value "disabled" excludes the node from the Plan.
	LabelPlanPrefix = "plan.upgrade.cattle.io/"
	// Disabled is the node label value that opts a node out of a Plan.
	Disabled = "disabled"
)

// LabelPlanName is the node (and Job) label of one Plan: plan.upgrade.cattle.io/<plan>.
func LabelPlanName(plan string) string { return LabelPlanPrefix + plan }

// Condition types of a Plan (types.go: PlanLatestResolved, PlanSpecValidated, PlanComplete).
const (
	CondLatestResolved = "LatestResolved"
	CondValidated      = "Validated"
	CondComplete       = "Complete"
)

// Plan is a SUC Plan.
type Plan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PlanSpec   `json:"spec,omitempty"`
	Status            PlanStatus `json:"status,omitempty"`
}

// PlanSpec is the part of the Plan spec unstick reads.
type PlanSpec struct {
	Concurrency           int64                         `json:"concurrency,omitempty"`
	JobActiveDeadlineSecs *int64                        `json:"jobActiveDeadlineSecs,omitempty"`
	NodeSelector          *metav1.LabelSelector         `json:"nodeSelector,omitempty"`
	ServiceAccountName    string                        `json:"serviceAccountName,omitempty"`
	Channel               string                        `json:"channel,omitempty"`
	Version               string                        `json:"version,omitempty"`
	Secrets               []SecretSpec                  `json:"secrets,omitempty"`
	Tolerations           []corev1.Toleration           `json:"tolerations,omitempty"`
	Exclusive             bool                          `json:"exclusive,omitempty"`
	Window                *TimeWindowSpec               `json:"window,omitempty"`
	Prepare               *ContainerSpec                `json:"prepare,omitempty"`
	Upgrade               *ContainerSpec                `json:"upgrade,omitempty"`
	Cordon                bool                          `json:"cordon,omitempty"`
	Drain                 *DrainSpec                    `json:"drain,omitempty"`
	ImagePullSecrets      []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	PostCompleteDelay     *metav1.Duration              `json:"postCompleteDelay,omitempty"`
}

// PlanStatus is the Plan status.
type PlanStatus struct {
	Conditions    []genericcondition.GenericCondition `json:"conditions,omitempty"`
	LatestVersion string                              `json:"latestVersion,omitempty"`
	LatestHash    string                              `json:"latestHash,omitempty"`
	Applying      []string                            `json:"applying,omitempty"`
}

// ContainerSpec is a Plan's prepare or upgrade container.
type ContainerSpec struct {
	Image   string   `json:"image"`
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
}

// DrainSpec is the Plan's kubectl drain parameters.
type DrainSpec struct {
	// Timeout is a duration string, or an integer count of nanoseconds (older Plans
	// serialised a *time.Duration).
	Timeout                  *DrainTimeout         `json:"timeout,omitempty"`
	GracePeriod              *int32                `json:"gracePeriod,omitempty"`
	DeleteLocalData          *bool                 `json:"deleteLocalData,omitempty"`
	DeleteEmptydirData       *bool                 `json:"deleteEmptydirData,omitempty"`
	IgnoreDaemonSets         *bool                 `json:"ignoreDaemonSets,omitempty"`
	Force                    bool                  `json:"force,omitempty"`
	DisableEviction          bool                  `json:"disableEviction,omitempty"`
	SkipWaitForDeleteTimeout int                   `json:"skipWaitForDeleteTimeout,omitempty"`
	PodSelector              *metav1.LabelSelector `json:"podSelector,omitempty"`
}

// SecretSpec is a Secret mounted into the Job.
type SecretSpec struct {
	Name          string `json:"name"`
	Path          string `json:"path,omitempty"`
	IgnoreUpdates bool   `json:"ignoreUpdates,omitempty"`
}

// TimeWindowSpec limits when Jobs are created.
type TimeWindowSpec struct {
	Days      []string `json:"days,omitempty"`
	StartTime string   `json:"startTime,omitempty"`
	EndTime   string   `json:"endTime,omitempty"`
	TimeZone  string   `json:"timeZone,omitempty"`
}

// Decode reads a Plan from its JSON.
func Decode(raw []byte) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	p.ManagedFields = nil
	return &p, nil
}

// FromMap reads a Plan from an unstructured object.
func FromMap(obj map[string]any) (*Plan, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return Decode(b)
}

// Condition returns the Plan's condition of that type, or nil.
func (p *Plan) Condition(typ string) *genericcondition.GenericCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsTrue reports a condition with status True.
func (p *Plan) IsTrue(typ string) bool {
	c := p.Condition(typ)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsFalse reports a condition with status False.
func (p *Plan) IsFalse(typ string) bool {
	c := p.Condition(typ)
	return c != nil && c.Status == corev1.ConditionFalse
}

// ConditionTime is the condition's last transition (else last update) time; zero if unknown.
func ConditionTime(c *genericcondition.GenericCondition) time.Time {
	if c == nil {
		return time.Time{}
	}
	for _, s := range []string{c.LastTransitionTime, c.LastUpdateTime} {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// ConditionUpdated is the condition's last update (else transition) time; zero if unknown.
func ConditionUpdated(c *genericcondition.GenericCondition) time.Time {
	if c == nil {
		return time.Time{}
	}
	for _, s := range []string{c.LastUpdateTime, c.LastTransitionTime} {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// MungeVersion is SUC's version-to-tag rule: "+" is not allowed in an image tag, so
// v1.30.3+rke2r1 becomes v1.30.3-rke2r1 (pkg/upgrade/plan/plan.go MungeVersion).
func MungeVersion(v string) string { return strings.ReplaceAll(v, "+", "-") }

// ResolvedVersion is the version the Plan's Jobs use: status.latestVersion, else spec.version
// munged the way the controller would (a Plan whose status was not written yet).
func (p *Plan) ResolvedVersion() string {
	if p.Status.LatestVersion != "" {
		return p.Status.LatestVersion
	}
	return MungeVersion(p.Spec.Version)
}

// Stage names a container of an upgrade Job.
type Stage string

const (
	StagePrepare Stage = "prepare"
	StageDrain   Stage = "drain"
	StageCordon  Stage = "cordon"
	StageUpgrade Stage = "upgrade"
)

// StageImage is one image a Plan's Jobs run, with the Plan's value before resolution.
type StageImage struct {
	Stage Stage
	// Image is what the Job's container gets: an untagged Plan image with the resolved version
	// as its tag (container.go WithLatestTag), the kubectl image for drain/cordon.
	Image string
	// Spec is the value written in the Plan (or the controller setting for drain/cordon).
	Spec string
}

// Images are the images a Job generated from the Plan now would run, in Job order:
// prepare, drain or cordon (the controller's kubectl image), upgrade.
func (p *Plan) Images(kubectlImage string) []StageImage {
	return p.ImagesFor(kubectlImage, p.ResolvedVersion())
}

// ImagesFor is Images with the Plan moved to version (munged): what its Jobs would run after
// `spec.version` is set to it (preflight --target-version).
func (p *Plan) ImagesFor(kubectlImage, version string) []StageImage {
	var out []StageImage
	version = MungeVersion(version)
	if p.Spec.Prepare != nil && p.Spec.Prepare.Image != "" {
		out = append(out, StageImage{StagePrepare, WithLatestTag(p.Spec.Prepare.Image, version), p.Spec.Prepare.Image})
	}
	switch {
	case p.Spec.Drain != nil:
		out = append(out, StageImage{StageDrain, kubectlImage, kubectlImage})
	case p.Spec.Cordon:
		out = append(out, StageImage{StageCordon, kubectlImage, kubectlImage})
	}
	if p.Spec.Upgrade != nil && p.Spec.Upgrade.Image != "" {
		out = append(out, StageImage{StageUpgrade, WithLatestTag(p.Spec.Upgrade.Image, version), p.Spec.Upgrade.Image})
	}
	return out
}

// Ref names the Plan for messages: namespace/name.
func (p *Plan) Ref() string { return p.Namespace + "/" + p.Name }

func (p *Plan) String() string { return fmt.Sprintf("Plan %s/%s", p.Namespace, p.Name) }

// DrainTimeout is a drain timeout as a Plan may hold it: a duration string ("10m"), or an
// integer count of nanoseconds (Plans written when the field was a *time.Duration).
type DrainTimeout struct{ D time.Duration }

// UnmarshalJSON accepts both forms.
func (t *DrainTimeout) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("drain timeout %q: %w", s, err)
		}
		t.D = d
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("drain timeout %s: want a duration string or nanoseconds", b)
	}
	t.D = time.Duration(n)
	return nil
}

// MarshalJSON writes the duration string.
func (t DrainTimeout) MarshalJSON() ([]byte, error) { return json.Marshal(t.D.String()) }

var kubeVersionRE = lazyre.New(`^v?1\.(\d+)\.\d+(?:[-+][0-9A-Za-z.+-]*)?$`)

// minSUCKubeMinor is the oldest Kubernetes minor a system-upgrade-controller runs on (its Plan
// CRD is apiextensions.k8s.io/v1, served from 1.16): a Plan version v1.4.2 is an OS or tool
// version, not a Kubernetes one.
const minSUCKubeMinor = 16

// IsKubernetesVersion reports a Kubernetes version (v1.30.3, v1.30.3+rke2r1, v1.30.3-k3s1).
func IsKubernetesVersion(v string) bool {
	m := kubeVersionRE().FindStringSubmatch(v)
	if m == nil {
		return false
	}
	minor, err := strconv.Atoi(m[1])
	return err == nil && minor >= minSUCKubeMinor
}

// UpgradesKubernetes reports a Plan that moves nodes to a Kubernetes version (the RKE2/K3s
// upgrade Plans Rancher and the k3s/rke2 docs write): its version is a Kubernetes version, or
// its upgrade image is rke2-upgrade / k3s-upgrade.
func (p *Plan) UpgradesKubernetes() bool {
	if IsKubernetesVersion(p.ResolvedVersion()) {
		return true
	}
	if p.Spec.Upgrade != nil {
		repo := p.Spec.Upgrade.Image
		if i := strings.LastIndexAny(repo, "@"); i >= 0 {
			repo = repo[:i]
		}
		if i := strings.LastIndex(repo, "/"); i >= 0 {
			repo = repo[i+1:]
		}
		repo, _, _ = strings.Cut(repo, ":")
		return repo == "rke2-upgrade" || repo == "k3s-upgrade"
	}
	return false
}

// VersionFor is the version the Plan's Jobs would use: target for a Kubernetes upgrade Plan
// when a target is given, else the resolved version.
func (p *Plan) VersionFor(target string) string {
	if _, ok := ParseKubectlTag(strings.TrimPrefix(target, "v")); ok && strings.Count(target, ".") >= 2 && p.UpgradesKubernetes() {
		return MungeVersion(target)
	}
	return p.ResolvedVersion()
}
