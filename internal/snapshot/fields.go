package snapshot

import (
	"strings"
	"sync"

	"github.com/unstick-dev/unstick/internal/fleetconfig"
	"github.com/unstick-dev/unstick/internal/redact"
)

// What leaves a cluster is an allowlist: `collect` bundles and fix's evidence keep, per kind,
// only the fields below — the ones the checks, the incident builder and the fix plans read —
// and drop everything else (the object gets a RemovedAnnotation naming what went). Free text
// that must be kept (messages, reasons a check classifies) passes the redactor on the way.
//
// A check that starts reading a field must add it here; the scenario suite scans every
// scenario both as written and through this allowlist and fails when the findings differ.

// RemovedAnnotation lists, on an object that left the cluster, the fields the allowlist
// removed from it.
const RemovedAnnotation = "unstick.dev/removed-fields"

// Counts under which replaced values are reported.
const (
	countEnv       = "environment values"
	countConfigMap = "ConfigMap values"
	countSecret    = "Secret values"
)

// meta is what every kind keeps of its metadata: identity, ownership, labels (selectors and
// Helm/Fleet/SUC bookkeeping are labels) and times. Annotations are not read by any check.
func meta() []redact.Rule {
	return redact.Keep(
		"apiVersion", "kind",
		"metadata.name", "metadata.namespace", "metadata.uid", "metadata.resourceVersion", "metadata.generation",
		"metadata.creationTimestamp", "metadata.deletionTimestamp", "metadata.deletionGracePeriodSeconds",
		"metadata.labels", "metadata.ownerReferences", "metadata.finalizers",
	)
}

// container is what the checks read of a container: its image (image checks, SUC stages),
// resources (headroom, agent requests), the names and sources of its environment (missing
// ConfigMap/Secret references, the SUC controller's settings) — never a value, except the
// controller's SYSTEM_UPGRADE_* settings.
func container(p string) []redact.Rule {
	return append(redact.Keep(
		p+".name", p+".image", p+".imagePullPolicy", p+".resources", p+".ports",
		p+".env[].name", p+".env[].valueFrom", p+".envFrom", p+".volumeMounts",
	), redact.Setting(p+".env[].value", countEnv))
}

// podSpec is what the checks read of a pod spec (a Pod's, or a workload's template).
func podSpec(p string) []redact.Rule {
	rs := redact.Keep(
		p+".nodeName", p+".nodeSelector", p+".affinity", p+".tolerations", p+".schedulerName",
		p+".priorityClassName", p+".priority", p+".serviceAccountName", p+".serviceAccount",
		p+".imagePullSecrets", p+".terminationGracePeriodSeconds", p+".overhead", p+".restartPolicy",
		p+".volumes[].name", p+".volumes[].configMap", p+".volumes[].secret", p+".volumes[].projected",
		p+".volumes[].persistentVolumeClaim", p+".volumes[].emptyDir", p+".volumes[].hostPath",
	)
	rs = append(rs, container(p+".containers[]")...)
	return append(rs, container(p+".initContainers[]")...)
}

func template(p string) []redact.Rule {
	return append(redact.Keep(p+".metadata.labels"), podSpec(p+".spec")...)
}

func webhookConfiguration() [][]redact.Rule {
	return [][]redact.Rule{redact.Keep(
		"webhooks[].name", "webhooks[].clientConfig.service", "webhooks[].rules", "webhooks[].failurePolicy",
		"webhooks[].namespaceSelector", "webhooks[].objectSelector", "webhooks[].timeoutSeconds")}
}

// fields is the allowlist, keyed by group/Kind ("" group for core).
func fields() map[string][][]redact.Rule {
	return map[string][][]redact.Rule{
		"/Pod": {podSpec("spec"), redact.KeepText("status")},
		"/Node": {redact.Keep("spec"), redact.KeepText(
			"status.conditions", "status.nodeInfo", "status.allocatable", "status.capacity", "status.addresses")},
		"/Namespace": {redact.Keep("spec"), redact.KeepText("status")},
		// Event messages are kept (the checks classify them), redacted.
		"/Event": {
			redact.Keep("involvedObject", "reason", "type", "count", "firstTimestamp", "lastTimestamp", "eventTime",
				"series", "source", "reportingComponent", "reportingInstance", "action", "related"),
			redact.KeepText("message"),
		},
		"events.k8s.io/Event": {
			redact.Keep("regarding", "reason", "type", "eventTime", "series", "reportingController", "reportingInstance", "action", "related",
				"deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount"),
			redact.KeepText("note"),
		},
		// Which keys a ConfigMap or Secret has (a pod referring to a missing one); values never,
		// except the system-upgrade-controller's settings in its env ConfigMap and, of the Fleet
		// controller's config, the agents' check-in interval (controllerCheckin).
		"/ConfigMap":      {{redact.Setting("data.*", countConfigMap)}},
		"/Secret":         {redact.Keep("type"), {redact.Blank("data.*", countSecret)}},
		"/ResourceQuota":  {redact.Keep("spec.hard", "spec.scopes", "spec.scopeSelector", "status")},
		"/ServiceAccount": {redact.Keep("imagePullSecrets", "secrets[].name", "automountServiceAccountToken")},
		"apps/Deployment": {
			redact.Keep("spec.replicas", "spec.selector", "spec.paused", "spec.strategy", "spec.minReadySeconds",
				"spec.progressDeadlineSeconds", "spec.revisionHistoryLimit"),
			template("spec.template"), redact.KeepText("status"),
		},
		"apps/ReplicaSet": {redact.Keep("spec.replicas", "spec.selector", "spec.minReadySeconds"), template("spec.template"), redact.KeepText("status")},
		"apps/DaemonSet": {
			redact.Keep("spec.selector", "spec.updateStrategy", "spec.minReadySeconds", "spec.revisionHistoryLimit"),
			template("spec.template"), redact.KeepText("status"),
		},
		"apps/StatefulSet": {
			redact.Keep("spec.replicas", "spec.selector", "spec.serviceName", "spec.podManagementPolicy", "spec.updateStrategy",
				"spec.minReadySeconds", "spec.revisionHistoryLimit"),
			template("spec.template"), redact.KeepText("status"),
		},
		// A SUC Job's drain and cordon containers run kubectl with the flags the Plan's drain
		// spec gives (suc/job-stale-spec, suc/kubectl-skew compare them); other args go.
		"batch/Job": {
			redact.Keep("spec.activeDeadlineSeconds", "spec.backoffLimit", "spec.completions", "spec.parallelism",
				"spec.suspend", "spec.selector", "spec.ttlSecondsAfterFinished"),
			template("spec.template"),
			{redact.IfName("spec.template.spec.initContainers[].args", "drain", "cordon")},
			redact.KeepText("status"),
		},
		"apiextensions.k8s.io/CustomResourceDefinition": {
			redact.Keep("spec.group", "spec.names", "spec.scope", "spec.versions[].name", "spec.versions[].served",
				"spec.versions[].storage", "spec.versions[].deprecated", "spec.versions[].deprecationWarning",
				"status.storedVersions", "status.acceptedNames"),
			redact.KeepText("status.conditions"),
		},
		// Fleet Cluster: spec.agentEnvVars keep their names, templateValues go.
		"fleet.cattle.io/Cluster": {
			redact.Keep("spec.paused", "spec.clientID", "spec.kubeConfigSecret", "spec.kubeConfigSecretNamespace",
				"spec.redeployAgentGeneration", "spec.agentNamespace", "spec.agentTolerations", "spec.agentAffinity",
				"spec.agentResources", "spec.hostNetwork", "spec.agentSchedulingCustomization", "spec.agentPullSecrets",
				"spec.agentEnvVars[].name", "spec.agentEnvVars[].valueFrom",
				// Who set spec.paused, and when they last wrote: fleet/cluster-paused says since when.
				"metadata.managedFields[].manager", "metadata.managedFields[].time", "metadata.managedFields[].fieldsV1"),
			{redact.Setting("spec.agentEnvVars[].value", countEnv)},
			redact.KeepText("spec.privateRepoURL", "status"),
		},
		// Bundle: no resources (manifests), no Helm values or targets (per-cluster overrides).
		"fleet.cattle.io/Bundle": {
			redact.Keep("spec.paused", "spec.forceSyncGeneration", "spec.defaultNamespace", "spec.namespace",
				"spec.rolloutStrategy", "spec.dependsOn", "spec.contentsId",
				"spec.helm.releaseName", "spec.helm.chart", "spec.helm.version", "spec.helm.maxHistory",
				"spec.helm.timeoutSeconds", "spec.helm.force", "spec.helm.takeOwnership", "spec.helm.atomic"),
			redact.KeepText("spec.helm.repo", "status"),
		},
		// BundleDeployment: the fields snapshot.BundleDeployment decodes.
		"fleet.cattle.io/BundleDeployment": {
			redact.Keep("spec.deploymentID", "spec.stagedDeploymentID", "spec.paused", "spec.offSchedule", "spec.ociContents",
				"spec.options.helm.releaseName", "spec.stagedOptions.helm.releaseName",
				"spec.options.defaultNamespace", "spec.options.namespace"),
			{redact.Presence("spec.helmChartOptions")},
			redact.KeepText("status"),
		},
		"fleet.cattle.io/ClusterRegistration": {redact.Keep("spec.clientID", "spec.clusterLabels", "status")},
		"fleet.cattle.io/Content":             {},
		// GitRepo: where it reads from and how often, and its status (commit, polling, conditions);
		// never the CA bundle or the per-resource status. The repo URL passes the redactor (a
		// password in it is masked).
		"fleet.cattle.io/GitRepo": {
			redact.Keep("spec.branch", "spec.revision", "spec.paths", "spec.pollingInterval", "spec.disablePolling",
				"spec.forceSyncGeneration", "spec.paused", "spec.clientSecretName", "spec.helmSecretName",
				"spec.helmSecretNameForPaths", "spec.targetNamespace", "spec.serviceAccount", "spec.webhookSecret",
				"status.observedGeneration", "status.updateGeneration", "status.commit", "status.webhookCommit",
				"status.lastWebhookTime", "status.pollingCommit", "status.gitJobStatus", "status.lastPollingTriggered",
				"status.readyClusters", "status.desiredReadyClusters", "status.summary", "status.resourceCounts"),
			redact.KeepText("spec.repo", "status.conditions", "status.display"),
		},
		// HelmOp: the chart it follows and its status; never values.
		"fleet.cattle.io/HelmOp": {
			redact.Keep("spec.helm.chart", "spec.helm.version", "spec.helm.releaseName", "spec.pollingInterval",
				"spec.helmSecretName", "spec.paused", "spec.dependsOn", "spec.labels",
				"status.observedGeneration", "status.readyClusters", "status.desiredReadyClusters", "status.summary",
				"status.resourceCounts", "status.version", "status.lastPollingTriggered"),
			redact.KeepText("spec.helm.repo", "status.conditions", "status.display"),
		},
		// Plan: images, selectors, drain and cordon settings; never envs, args, commands.
		"upgrade.cattle.io/Plan": {
			redact.Keep("spec.concurrency", "spec.jobActiveDeadlineSecs", "spec.nodeSelector", "spec.serviceAccountName",
				"spec.channel", "spec.version", "spec.secrets[].name", "spec.secrets[].path", "spec.secrets[].ignoreUpdates",
				"spec.tolerations", "spec.exclusive", "spec.window", "spec.prepare.image", "spec.upgrade.image",
				"spec.cordon", "spec.drain", "spec.imagePullSecrets", "spec.postCompleteDelay"),
			redact.KeepText("status"),
		},
		"rke.cattle.io/ETCDSnapshot": {
			redact.Keep("spec.clusterName", "snapshotFile.name", "snapshotFile.nodeName", "snapshotFile.createdAt",
				"snapshotFile.status", "snapshotFile.size"),
			redact.KeepText("spec.snapshotName", "spec.nodeName", "spec.location", "snapshotFile.location", "snapshotFile.message", "status"),
		},
		// Admission webhook configurations: which webhook a refusal names, the Service it is
		// served by, its failurePolicy and what it matches (workload/admission-denied,
		// workload/webhook-unavailable); not the CA bundle or a URL.
		"admissionregistration.k8s.io/ValidatingWebhookConfiguration": webhookConfiguration(),
		"admissionregistration.k8s.io/MutatingWebhookConfiguration":   webhookConfiguration(),
		"policy/PodDisruptionBudget": {
			redact.Keep("spec.minAvailable", "spec.maxUnavailable", "spec.selector", "spec.unhealthyPodEvictionPolicy"),
			redact.KeepText("status"),
		},
		// Rancher's provisioned clusters (v2prov): the Kubernetes version Rancher installs next (also
		// the upgrade gate's target, check/target.go), upgrade strategy, role counts and
		// status; never machineGlobalConfig, machineSelectorConfig, registries or chart values,
		// which may carry credentials.
		"provisioning.cattle.io/Cluster": {
			redact.Keep("spec.kubernetesVersion", "spec.rkeConfig.upgradeStrategy",
				"spec.rkeConfig.machinePools[].name", "spec.rkeConfig.machinePools[].quantity",
				"spec.rkeConfig.machinePools[].etcdRole", "spec.rkeConfig.machinePools[].controlPlaneRole",
				"spec.rkeConfig.machinePools[].workerRole", "spec.rkeConfig.machinePools[].machineOS",
				"spec.rkeConfig.etcd.disableSnapshots", "spec.rkeConfig.etcd.snapshotScheduleCron",
				"spec.rkeConfig.etcd.snapshotRetention", "spec.rkeConfig.machineGlobalConfig.system-default-registry",
				"status.clusterName", "status.ready",
				"status.observedGeneration", "status.agentDeployed"),
			redact.KeepText("status.conditions"),
		},
		"rke.cattle.io/RKEControlPlane": {
			redact.Keep("spec.kubernetesVersion", "spec.clusterName", "spec.managementClusterName", "spec.upgradeStrategy",
				"status.appliedSpec.kubernetesVersion", "status.agentConnected", "status.ready", "status.initialized",
				"status.observedGeneration"),
			redact.KeepText("status.conditions"),
		},
		"rke.cattle.io/RKEBootstrap": {
			redact.Keep("spec.clusterName", "status.ready", "status.dataSecretName"),
			redact.KeepText("status.conditions"),
		},
		"cluster.x-k8s.io/Cluster": {
			redact.Keep("spec.paused", "spec.controlPlaneRef", "spec.infrastructureRef", "status.phase",
				"status.infrastructureReady", "status.controlPlaneReady", "status.initialization"),
			redact.KeepText("status.conditions", "status.v1beta2", "status.deprecated"),
		},
		"cluster.x-k8s.io/Machine": {
			redact.Keep("spec.clusterName", "spec.bootstrap.configRef", "spec.infrastructureRef", "spec.version",
				"status.nodeRef", "status.nodeInfo", "status.phase", "status.bootstrapReady", "status.infrastructureReady",
				"status.lastUpdated", "status.initialization"),
			redact.KeepText("status.conditions", "status.v1beta2", "status.deprecated", "status.failureMessage", "status.failureReason"),
		},
		"cluster.x-k8s.io/MachineSet": {
			redact.Keep("spec.clusterName", "spec.replicas", "spec.selector"),
			redact.KeepText("status"),
		},
		"cluster.x-k8s.io/MachineDeployment": {
			redact.Keep("spec.clusterName", "spec.replicas", "spec.selector", "spec.strategy", "spec.rollout"),
			redact.KeepText("status"),
		},
		"cluster.x-k8s.io/MachineHealthCheck": {
			redact.Keep("spec.clusterName", "spec.selector", "spec.maxUnhealthy", "spec.unhealthyConditions",
				"spec.nodeStartupTimeout", "spec.checks"),
			redact.KeepText("status"),
		},
		// Rancher's own record of every cluster: the imported clusters' version management.
		"management.cattle.io/Cluster": {
			redact.Keep("spec.displayName", "spec.internal", "spec.fleetWorkspaceName",
				"spec.rke2Config.kubernetesVersion", "spec.k3sConfig.kubernetesVersion", "status.driver", "status.provider", "status.version",
				"status.agentImage", "status.connected"),
			redact.KeepText("status.conditions"),
		},
		// Settings: the loader and the bundle writer drop the value of all but the settings the
		// checks read (server-url, system-default-registry, imported-cluster-version-management).
		"management.cattle.io/Setting": {redact.Keep("value", "default", "source")},
		"k3s.cattle.io/ETCDSnapshotFile": {
			redact.Keep("spec.snapshotName", "spec.nodeName"),
			redact.KeepText("spec.location", "status"),
		},
	}
}

// allowlists are the compiled allowlists by group/Kind, and the one of a kind without an
// entry (its metadata only), compiled the first time an object is reduced: a verb that reduces
// nothing does not build them.
var allowlists = sync.OnceValues(func() (map[string]*redact.Allowlist, *redact.Allowlist) {
	out := map[string]*redact.Allowlist{}
	for k, rs := range fields() {
		out[k] = redact.Compile(append([][]redact.Rule{meta()}, rs...)...)
	}
	return out, redact.Compile(meta())
})

// Keep reduces obj, in place, to the allowlisted fields of its kind (a kind with no entry
// keeps its metadata only), records what it removed in RemovedAnnotation, and counts replaced
// values and redacted text in counts.
func Keep(apiVersion, kind string, obj map[string]any, counts map[string]int) {
	group := ""
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		group = apiVersion[:i]
	}
	compiled, metaOnly := allowlists()
	a := compiled[group+"/"+kind]
	if a == nil {
		a = metaOnly
	}
	checkin := controllerCheckin(kind, obj)
	removed := a.Apply(obj, counts)
	if checkin != "" {
		if data, ok := obj["data"].(map[string]any); ok {
			data[fleetconfig.Key] = checkin
		}
	}
	if len(removed) == 0 {
		return
	}
	counts["fields outside the allowlist"] += len(removed)
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	md["annotations"] = map[string]any{RemovedAnnotation: strings.Join(removed, ",")}
}

// controllerCheckin is, for the fleet-controller ConfigMap, its config reduced to the agents'
// check-in interval (fleetconfig.Reduce); "" for anything else.
func controllerCheckin(kind string, obj map[string]any) string {
	if kind != "ConfigMap" {
		return ""
	}
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	if !fleetconfig.IsControllerConfig(ns, name) {
		return ""
	}
	data, _ := obj["data"].(map[string]any)
	s, _ := data[fleetconfig.Key].(string)
	return fleetconfig.Reduce(s)
}
