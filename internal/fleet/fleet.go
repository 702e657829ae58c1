// Package fleet holds pure, typed views over Fleet's API objects: the states and rules the
// Fleet controller itself applies (rancher/fleet v0.16), so checks judge them the same way.
package fleet

import (
	"strconv"
	"strings"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	"github.com/rancher/wrangler/v3/pkg/genericcondition"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// BundleDeployment states, as Fleet's summary computes them.
const (
	StateReady       = "Ready"
	StateNotReady    = "NotReady"
	StateWaitApplied = "WaitApplied"
	StateErrApplied  = "ErrApplied"
	StateOutOfSync   = "OutOfSync"
	StateModified    = "Modified"
	StatePending     = "Pending"
)

// StateRank is Fleet's severity order of BundleDeployment states (higher is worse).
var StateRank = map[string]int{
	StateErrApplied: 7, StateWaitApplied: 6, StateModified: 5, StateOutOfSync: 4,
	StatePending: 3, StateNotReady: 2, StateReady: 1,
}

// BDState computes a BundleDeployment's state in the order Fleet's summary does: not yet
// applied (ErrApplied when the Deployed condition is False, else WaitApplied), not ready,
// staged but not deployed (OutOfSync), modified, else Ready.
func BDState(bd *snapshot.BundleDeployment) string {
	switch {
	case bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID:
		if c := Condition(bd.Status.Conditions, "Deployed"); c != nil && string(c.Status) == "False" {
			return StateErrApplied
		}
		return StateWaitApplied
	case !bd.Status.Ready:
		return StateNotReady
	case bd.Spec.DeploymentID != bd.Spec.StagedDeploymentID:
		return StateOutOfSync
	case !bd.Status.NonModified:
		return StateModified
	}
	return StateReady
}

// Condition returns the condition of that type, or nil.
func Condition(cs []genericcondition.GenericCondition, typ string) *genericcondition.GenericCondition {
	for i := range cs {
		if string(cs[i].Type) == typ {
			return &cs[i]
		}
	}
	return nil
}

// AgentBundlePrefix starts the name of the Bundle (and BundleDeployment) through which the
// Fleet controller deploys a cluster's agent: fleet-agent-<cluster>.
const AgentBundlePrefix = "fleet-agent-"

// IsAgentBundle reports whether a Bundle/BundleDeployment name is an agent's.
func IsAgentBundle(name string) bool { return strings.HasPrefix(name, AgentBundlePrefix) }

// LabelBundleName and LabelBundleNamespace are set by Fleet on every BundleDeployment.
const (
	LabelBundleName      = "fleet.cattle.io/bundle-name"
	LabelBundleNamespace = "fleet.cattle.io/bundle-namespace"
	LabelClusterName     = "fleet.cattle.io/cluster"
	LabelClusterNS       = "fleet.cattle.io/cluster-namespace"
)

// BundleName is the Bundle a BundleDeployment comes from.
func BundleName(bd *snapshot.BundleDeployment) string {
	if n := bd.Labels.Get(LabelBundleName); n != "" {
		return n
	}
	return bd.Name
}

// Default agent namespaces.
const (
	DefaultAgentNamespace = "cattle-fleet-system"
	LocalAgentNamespace   = "cattle-fleet-local-system"
)

// AgentNamespace is where a cluster's agent runs.
func AgentNamespace(c *fleetv1.Cluster) string {
	if c.Spec.AgentNamespace != "" {
		return c.Spec.AgentNamespace
	}
	if c.Status.Agent.Namespace != "" {
		return c.Status.Agent.Namespace
	}
	if c.Namespace == "fleet-local" && c.Name == "local" {
		return LocalAgentNamespace
	}
	return DefaultAgentNamespace
}

// IsAgentNamespace reports a namespace Fleet agents run in.
func IsAgentNamespace(ns string) bool {
	return ns == DefaultAgentNamespace || ns == LocalAgentNamespace
}

// ManagerDeploysAgent reports whether the Fleet controller itself deploys this cluster's agent
// (manager-initiated registration: spec.kubeConfigSecret set, as Rancher does for the clusters
// it manages and Fleet for its local cluster). Only then does Fleet track the agent with
// agentDeployedGeneration and the migration flags; for agent-initiated registrations and
// clusters labelled fleet.cattle.io/non-managed-agent those fields stay unset for good, and
// reading them as "not deployed" would flag every such cluster (rancher/fleet import.go).
func ManagerDeploysAgent(fc *fleetv1.Cluster) bool {
	if _, ok := fc.Labels["fleet.cattle.io/non-managed-agent"]; ok {
		return false
	}
	return fc.Spec.KubeConfigSecret != ""
}

// AgentNotDeployedReasons lists why Fleet does not consider the wanted agent deployed: the
// three migrations done, no config change pending, and the deployed generation equal to the
// wanted redeploy generation. Empty means deployed.
func AgentNotDeployedReasons(c *fleetv1.Cluster) []string {
	var why []string
	if !c.Status.AgentMigrated {
		why = append(why, "status.agentMigrated is false")
	}
	if !c.Status.CattleNamespaceMigrated {
		why = append(why, "status.cattleNamespaceMigrated is false")
	}
	if !c.Status.AgentNamespaceMigrated {
		why = append(why, "status.agentNamespaceMigrated is false")
	}
	if c.Status.AgentConfigChanged {
		why = append(why, "status.agentConfigChanged is true (new agent configuration not rolled out)")
	}
	if c.Status.AgentDeployedGeneration == nil {
		why = append(why, "status.agentDeployedGeneration is not set")
	} else if *c.Status.AgentDeployedGeneration != c.Spec.RedeployAgentGeneration {
		why = append(why, "status.agentDeployedGeneration "+itoa(*c.Status.AgentDeployedGeneration)+" != spec.redeployAgentGeneration "+itoa(c.Spec.RedeployAgentGeneration))
	}
	return why
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }
