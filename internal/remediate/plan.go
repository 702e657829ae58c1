// Package remediate turns judged findings into a remediation plan: for each incident, the fix
// ladder of SPEC §4 (observe → resync → restart → repair → realign) as concrete, ordered steps,
// each saying what it changes, why, how risky it is, what must still hold when it runs, how
// its success is verified, and the kubectl or helm command an operator would type instead.
//
// Planning is pure: it reads the snapshot and the findings and nothing else (no client, no
// registry, no clock). The live executor that backs up, dry-runs, applies and verifies the
// steps is internal/remediate/execute; depcheck_test.go keeps the two apart.
package remediate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/unstick-dev/unstick/internal/finding"
)

// SchemaVersion versions the JSON form of a Plan (`unstick fix -o json`).
const SchemaVersion = "1"

// Risk is how much a step can break. The zero value is None (observe only).
type Risk int

const (
	None Risk = iota
	Low
	Medium
	High
)

var riskNames = []string{"none", "low", "medium", "high"}

func (r Risk) String() string {
	if r >= None && int(r) < len(riskNames) {
		return riskNames[r]
	}
	return "unknown"
}

// ParseRisk reads none|low|medium|high.
func ParseRisk(s string) (Risk, error) {
	for i, n := range riskNames {
		if strings.EqualFold(s, n) {
			return Risk(i), nil
		}
	}
	return 0, fmt.Errorf("unknown risk %q (want low, medium or high)", s)
}

func (r Risk) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

func (r *Risk) UnmarshalText(b []byte) error {
	v, err := ParseRisk(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Rungs of the ladder, lowest first (SPEC §4).
const (
	RungObserve = "observe"
	RungResync  = "resync"
	RungRestart = "restart"
	RungRepair  = "repair"
	RungRealign = "realign"
)

var rungOrder = map[string]int{RungObserve: 0, RungResync: 1, RungRestart: 2, RungRepair: 3, RungRealign: 4}

// Action is what a step does. Each has one implementation in the executor.
type Action string

const (
	// Observe saves the incident's objects, their events and their pods' last logs.
	Observe Action = "observe"
	// RedeployAgent bumps a Fleet Cluster's spec.redeployAgentGeneration.
	RedeployAgent Action = "redeploy-agent"
	// ForceSync bumps spec.forceSyncGeneration of a Bundle or a GitRepo.
	ForceSync Action = "force-sync"
	// RolloutRestart sets kubectl.kubernetes.io/restartedAt on a Deployment's pod template,
	// as `kubectl rollout restart` does.
	RolloutRestart Action = "rollout-restart"
	// DeleteBundleDeployment deletes a BundleDeployment (the controller re-creates it).
	DeleteBundleDeployment Action = "delete-bundledeployment"
	// HelmRollback rolls a release back to an earlier revision the way `helm rollback` does.
	HelmRollback Action = "helm-rollback"
	// HelmMarkFailed marks a pending revision failed, as Fleet does when nothing can be
	// rolled back to.
	HelmMarkFailed Action = "helm-mark-failed"
	// PatchPlanImage sets a SUC Plan's prepare or upgrade image.
	PatchPlanImage Action = "patch-plan-image"
	// DeleteJob deletes a SUC Job so the controller creates it again from the Plan.
	DeleteJob Action = "delete-job"
	// RemoveNodeLabel removes a node's plan.upgrade.cattle.io/<plan> label.
	RemoveNodeLabel Action = "remove-node-label"
	// Uncordon makes a node schedulable again.
	Uncordon Action = "uncordon"
	// HelmRewriteAPIs replaces removed apiVersions in a release record's stored manifest with
	// their replacements (what helm-mapkubeapis does), in place, through Helm's storage.
	HelmRewriteAPIs Action = "helm-rewrite-apis"
	// MigrateStorage rewrites every object of a CRD so the API server stores it in the
	// CRD's storage version (a StorageVersionMigration when the cluster runs one).
	MigrateStorage Action = "migrate-storage"
	// TrimStoredVersions sets a CRD's status.storedVersions to its storage version, after a
	// migration.
	TrimStoredVersions Action = "trim-stored-versions"
)

// Mutating reports whether the action changes the cluster.
func (a Action) Mutating() bool { return a != Observe }

// Object is a Kubernetes object a step reads or writes, as seen when planning.
type Object struct {
	Cluster    string `json:"cluster"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
	// ResourceVersion is the version read when planning: the step's precondition. Empty for
	// an object the step creates (it must not exist yet).
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Create marks an object the step creates.
	Create bool `json:"create,omitempty"`
}

// Ref renders the object as Kind/namespace/name (Kind/name for cluster scope).
func (o Object) Ref() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// Key identifies the object across runs: cluster, kind, namespace, name.
func (o Object) Key() string { return o.Cluster + "/" + o.Ref() }

// Group is the object's API group ("" for the core group).
func (o Object) Group() string {
	if i := strings.Index(o.APIVersion, "/"); i >= 0 {
		return o.APIVersion[:i]
	}
	return ""
}

// Reason is a finding a step answers, with the evidence that showed it.
type Reason struct {
	FindingID string             `json:"findingID"`
	Cluster   string             `json:"cluster"`
	Object    finding.ObjectRef  `json:"object"`
	Summary   string             `json:"summary"`
	Evidence  []finding.Evidence `json:"evidence,omitempty"`
}

func reasonOf(f finding.Finding) Reason {
	return Reason{FindingID: f.ID, Cluster: f.Cluster, Object: f.Object, Summary: f.Summary, Evidence: f.Evidence}
}

// Step is one change (or, for Observe, one saving of evidence).
type Step struct {
	// ID is stable across runs for the same change to the same object (it leaves out
	// resource versions and values that move), so a rerun recognises finished steps.
	ID     string `json:"id"`
	Action Action `json:"action"`
	Rung   string `json:"rung"`
	Risk   Risk   `json:"risk"`
	// Cluster is where the step runs (a kubeconfig context, or a bundle's cluster name).
	Cluster string `json:"cluster"`
	// Target is the object the step changes; Touches every object it may write, Target
	// first. Each is backed up before the first write.
	Target  Object   `json:"target"`
	Touches []Object `json:"touches"`
	// Creates lists objects the step may create besides (a StorageVersionMigration, when the
	// cluster serves the API and lets the caller create one). Each is recorded as absent in
	// the backup before it is created, and restore removes it.
	Creates []Object `json:"creates,omitempty"`
	// Evidence lists further objects whose state, events and logs are saved with the backup.
	Evidence []Object `json:"evidence,omitempty"`
	// Change says what the step changes; Why the findings it answers; Rationale the
	// catalogue's word for this rung.
	Change    string   `json:"change"`
	Why       []Reason `json:"why"`
	Rationale string   `json:"rationale,omitempty"`
	// Precondition and Verify say, in words, what must hold for the write and what shows that
	// the state moved.
	Precondition string `json:"precondition"`
	Verify       string `json:"verify"`
	// Commands are the equivalent kubectl or helm commands.
	Commands []string `json:"commands"`
	// Notes are caveats an operator should read before approving the step.
	Notes []string `json:"notes,omitempty"`
	// ManifestObjects are, for a rollback, the objects of the target revision's manifest it
	// re-applies, each with the rule it is judged by before the first write.
	ManifestObjects []PlannedObject `json:"manifestObjects,omitempty"`

	// Parameters of the change, by action.
	Generation int64             `json:"generation,omitempty"` // redeploy-agent, force-sync: the value written
	Previous   int64             `json:"previous,omitempty"`   // the value it replaces
	Helm       *HelmChange       `json:"helm,omitempty"`
	Image      *ImageChange      `json:"image,omitempty"`
	Label      string            `json:"label,omitempty"` // remove-node-label: the key
	LabelValue string            `json:"labelValue,omitempty"`
	Rewrite    *APIRewrite       `json:"rewrite,omitempty"`
	Storage    *StorageMigration `json:"storage,omitempty"`
	// Settles is set on a resync step answering a Helm incident: the Fleet controller
	// reconciling the bump is not enough, the release itself must move on to a deployed
	// revision (the agent rolled back and upgraded again) before the step verifies. Against
	// the real Fleet v0.16.0 the controller reconciles a force-sync at once while a dead or
	// crash-looping agent leaves the release pending: the bump alone proves nothing.
	Settles *ReleaseRef `json:"settles,omitempty"`
	// ChecksIn is set on the agent steps (redeploy, restart) of an incident whose agent stopped
	// checking in: the step verifies only once that Fleet Cluster's status.agent.lastSeen is
	// later than the step's start. agentmanagement records a redeploy as deployed whether or
	// not the agent comes back (against the real Fleet v0.16.0 it does so for a wedged agent
	// whose pod it leaves running), so the controller's reconcile alone proves nothing.
	ChecksIn *FleetClusterRef `json:"checksIn,omitempty"`
	// Deploys is set on the steps of a BundleDeployment incident: the step verifies only once
	// that BundleDeployment is Ready at the deployment the step brings about (applied
	// deploymentID equal to spec.deploymentID, no condition False or with reason Error). The
	// Fleet controller observes a force-sync at once whatever becomes of the deployment, so
	// the bump alone proves nothing.
	Deploys *BundleDeploymentRef `json:"deploys,omitempty"`
	// Upgrades is set on the last SUC step of an attempt (patch a Plan's image, delete its
	// Job, remove a node's plan label, uncordon): the step verifies only once each named node is done
	// with the Plan — its plan label reads the Plan's status.latestHash, or a Job of the Plan
	// for that node at that hash, not one the plan read, is Complete. The object patched or
	// deleted proves only that the controller may now run the upgrade.
	Upgrades *PlanNodesRef `json:"upgrades,omitempty"`
}

// PlanNodesRef names a SUC Plan and the nodes a step must see it complete on.
type PlanNodesRef struct {
	Cluster   string   `json:"cluster"`
	Namespace string   `json:"namespace"`
	Plan      string   `json:"plan"`
	Nodes     []string `json:"nodes"`
	// Jobs are the UIDs of the Plan's Jobs when planned: none of them is the outcome.
	Jobs []string `json:"jobs,omitempty"`
}

// BundleDeploymentRef names a BundleDeployment on a management cluster as it was planned, and
// what must change before its state counts as the step's outcome.
type BundleDeploymentRef struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
	// DeploymentID is spec.deploymentID when planned.
	DeploymentID string `json:"deploymentID,omitempty"`
	// NewDeployment: the step makes the controller compute a new deploymentID (a force-sync
	// changes the deployment options it hashes); the old one, even Ready, is not the outcome.
	NewDeployment bool `json:"newDeployment,omitempty"`
	// NewObject: the step deletes the BundleDeployment; the one the controller creates in its
	// place (another UID) must become Ready.
	NewObject bool `json:"newObject,omitempty"`
}

// FleetClusterRef names a Fleet Cluster on a management cluster.
type FleetClusterRef struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// ReleaseRef names a Helm release on a cluster.
type ReleaseRef struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Release   string `json:"release"`
}

// APIRewrite is a release manifest rewrite: in each named revision's stored manifest, every
// document whose apiVersion and kind Kubernetes removed by KubernetesVersion gets the
// replacement apiVersion (internal/removedapi), and nothing else changes.
type APIRewrite struct {
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	// Revisions are rewritten in place: the newest one, and the last deployed one when that
	// is another (Helm builds an upgrade's "current release" from it).
	Revisions []int `json:"revisions"`
	// KubernetesVersion is the version the manifest must be served by ("v1.32"): the cluster's
	// own for api/removed (empty: read from the server when the step runs), the upgrade's
	// target for api/removed-in-target.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// APIs are the removals the plan knew of, "policy/v1beta1 PodDisruptionBudget ->
	// policy/v1"; the executor finds every one in the live manifest again.
	APIs []string `json:"apis,omitempty"`
}

// StorageMigration is a CRD's storage migration (migrate) or stored-versions trim (trim).
type StorageMigration struct {
	CRD            string `json:"crd"`
	Group          string `json:"group"`
	Plural         string `json:"plural"`
	Kind           string `json:"kind"`
	StorageVersion string `json:"storageVersion"`
	// StoredVersions are status.storedVersions as planned; the trim leaves only StorageVersion.
	StoredVersions []string `json:"storedVersions"`
	// MigrateStep is, for a trim, the migration step that must have verified first.
	MigrateStep string `json:"migrateStep,omitempty"`
	// Objects is how many objects the CRD had when the cluster was read (nil: not counted);
	// the migration's progress lines are measured against it.
	Objects *int `json:"objects,omitempty"`
}

// HelmChange is the release a Helm step works on.
type HelmChange struct {
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	// Current is the newest revision (the pending or failed one) and its status.
	Current       int    `json:"current"`
	CurrentStatus string `json:"currentStatus"`
	// Target is the revision rolled back to; NewRevision the revision the rollback writes.
	Target       int    `json:"target,omitempty"`
	TargetStatus string `json:"targetStatus,omitempty"`
	TargetChart  string `json:"targetChart,omitempty"`
	NewRevision  int    `json:"newRevision,omitempty"`
}

// SecretName is the storage Secret of one revision.
func (h *HelmChange) SecretName(rev int) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", h.Release, rev)
}

// ImageChange is a Plan image patch.
type ImageChange struct {
	Stage string `json:"stage"` // prepare | upgrade
	From  string `json:"from"`
	To    string `json:"to"`
	// Verified says what the registry answered for To.
	Verified string `json:"verified"`
}

// Attempt is one rung tried for an incident: its steps run in order and the attempt counts as
// done when every step verifies. Most attempts are one step; a SUC image fix is a chain
// (patch the Plan, then delete its stuck Jobs, then clear the node labels) because the parts
// are useless alone.
type Attempt struct {
	Rung  string `json:"rung"`
	Risk  Risk   `json:"risk"`
	Steps []Step `json:"steps"`
	// Blocked says why the attempt cannot run as planned (a missing --image, a release record
	// that cannot be read, ...); AboveMaxRisk that --max-risk keeps it from running.
	Blocked      string `json:"blocked,omitempty"`
	AboveMaxRisk bool   `json:"aboveMaxRisk,omitempty"`
	// Prepares marks an attempt that is only the first half of a fix (a storage migration,
	// which the trim that follows completes): verified, it does not end the ladder.
	Prepares bool `json:"prepares,omitempty"`
}

// Runnable reports whether the executor may run the attempt.
func (a Attempt) Runnable() bool { return a.Blocked == "" && !a.AboveMaxRisk }

// Mutating reports whether the attempt changes anything.
func (a Attempt) Mutating() bool {
	for _, s := range a.Steps {
		if s.Action.Mutating() {
			return true
		}
	}
	return false
}

// IncidentPlan is the ladder for one incident, lowest risk first. The executor stops at the
// first mutating attempt that verifies.
type IncidentPlan struct {
	ID        string   `json:"id"`
	RootCause Reason   `json:"rootCause"`
	Symptoms  []Reason `json:"symptoms,omitempty"`
	// Clusters are the clusters the incident affects (finding.Incident.Clusters).
	Clusters []string `json:"clusters"`
	// NextStep is the incident's next safe step as scan prints it (finding.Incident.NextStep):
	// its words and notes are shown with the attempt of the same rung.
	NextStep *finding.Step `json:"nextStep,omitempty"`
	Attempts []Attempt     `json:"attempts"`
}

// Manual is an incident with no automatic step: the operator takes its next safe step, as
// scan prints it, by hand.
type Manual struct {
	Finding Reason `json:"finding"`
	// Hint is what the rule says the operator should do instead, where it says something of
	// its own; otherwise that unstick takes no step here.
	Hint string `json:"hint"`
	// Clusters are the clusters the incident affects (finding.Incident.Clusters).
	Clusters []string `json:"clusters"`
	// NextStep is the incident's next safe step, filled in as scan prints it.
	NextStep *finding.Step `json:"nextStep,omitempty"`
}

// Plan is the whole remediation plan.
type Plan struct {
	SchemaVersion string         `json:"schemaVersion"`
	MaxRisk       Risk           `json:"maxRisk"`
	Incidents     []IncidentPlan `json:"incidents"`
	Manual        []Manual       `json:"manual,omitempty"`
}

// Steps lists every step in execution order.
func (p *Plan) Steps() []Step {
	var out []Step
	for _, inc := range p.Incidents {
		for _, a := range inc.Attempts {
			out = append(out, a.Steps...)
		}
	}
	return out
}

// Step finds a step by ID.
func (p *Plan) Step(id string) (Step, bool) {
	for _, s := range p.Steps() {
		if s.ID == id {
			return s, true
		}
	}
	return Step{}, false
}

// stepID hashes what identifies a change: the action, the cluster, the objects and the
// parameters that say which instance of a problem it answers (a Job's UID, a release's
// pending revision), but not resource versions.
func stepID(a Action, parts ...string) string {
	h := sha256.Sum256([]byte(string(a) + "\x00" + strings.Join(parts, "\x00")))
	return string(a) + "-" + hex.EncodeToString(h[:])[:10]
}
