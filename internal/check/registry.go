package check

// All is the registry: every check unstick runs, in one explicit list. A new check is added
// here, nowhere else.
func All() []Check {
	return []Check{
		// Fleet, read on the management cluster.
		fleetAgentUpgrade,
		fleetAgentHeartbeat,
		fleetRegistration,
		fleetBundles,
		fleetContent,
		fleetVersionSkew,
		fleetClusterPaused,
		// Fleet's pipeline before the BundleDeployment: GitRepo → gitjob → Bundle, dependsOn,
		// and agents that check in without applying.
		fleetGitRepoSync,
		fleetTargeting,
		fleetDependencies,
		fleetAgentStalled,
		// Objects too large for etcd or the API server.
		fleetObjectSize,
		// Helm release storage, on every cluster.
		helmReleases,
		// RKE2/K3s's bundled HelmCharts, whose Jobs a Kubernetes upgrade re-runs.
		helmChartJobs,
		helmReleaseSize,
		// Pods and workloads in the agent, SUC and system namespaces.
		podScheduling,
		podContainers,
		podTerminating,
		workloadCreate,
		quotedAdmission,
		workloadRollout,
		namespaceTerminating,
		setRollout,
		// Nodes that are down, on any cluster.
		nodeNotReady,
		// What agents say in their logs and events.
		agentLogs,
		// CRDs, removed built-in APIs and clocks.
		crdMissing,
		apiRemoved,
		crdVersions,
		clockSkew,
		// system-upgrade-controller Plans, their images, Jobs and nodes.
		sucPlanImages,
		sucController,
		sucPlanProgress,
		sucJobs,
		sucNodes,
		sucPlanSelection,
		sucPlanValidity,
		sucDrainReadiness,
		// Upgrade readiness: capacity, etcd snapshots, agent configuration.
		clusterHeadroom,
		etcdBackups,
		agentConfig,
		privateRegistryPullSecrets,
		// Rancher's own Kubernetes upgrades: provisioned clusters' machine plans, imported
		// clusters' version management.
		rancherProvisioned,
		rancherImported,
		rancherReadiness,
	}
}
