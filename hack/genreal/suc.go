package main

import (
	"strings"
	"time"
)

// plan is an upgrade.cattle.io/v1 Plan as system-upgrade-controller v0.20 writes its status.
type plan struct {
	name, version, channel, image, latestVersion string
	server                                       bool // selects control-plane nodes and cordons; else drains agents
	applying                                     []string
	complete                                     obj // the Complete condition
	created                                      time.Time
}

func (p plan) hash() string { return hash("plan" + p.name + p.latestVersion)[:56] }

func (p plan) object() obj {
	op := "DoesNotExist"
	if p.server {
		op = "In"
	}
	expr := obj{"key": "node-role.kubernetes.io/control-plane", "operator": op}
	if p.server {
		expr["values"] = []string{"true"}
	}
	spec := obj{"concurrency": 1, "serviceAccountName": "system-upgrade", "nodeSelector": obj{"matchExpressions": []obj{expr}},
		"upgrade": obj{"image": p.image}}
	if p.version != "" {
		spec["version"] = p.version
	}
	if p.channel != "" {
		spec["channel"] = p.channel
	}
	if p.server {
		spec["cordon"] = true
	} else {
		spec["drain"] = obj{"force": true, "skipWaitForDeleteTimeout": 60}
		spec["prepare"] = obj{"image": p.image, "args": []string{"prepare", "k3s-server"}}
	}
	st := obj{"latestVersion": p.munged(), "latestHash": p.hash(),
		"conditions": []obj{cond("LatestResolved", "True", p.created, "Version", ""), cond("Validated", "True", p.created, "PlanIsValid", ""), p.complete}}
	if p.channel != "" {
		st["conditions"].([]obj)[0]["reason"] = "Channel"
	}
	if len(p.applying) > 0 {
		st["applying"] = p.applying
	}
	m := meta("Plan", p.name, "system-upgrade", p.created, nil)
	m["generation"] = 1
	return obj{"apiVersion": "upgrade.cattle.io/v1", "kind": "Plan", "metadata": m, "spec": spec, "status": st}
}

// tagged is the image a Plan pulls: untagged images take latestVersion as tag ("+" -> "-").
func (p plan) tagged() string {
	if strings.Contains(p.image[strings.LastIndex(p.image, "/")+1:], ":") {
		return p.image
	}
	return p.image + ":" + p.munged()
}

// munged is the version as SUC records it in status and labels: "+" becomes "-".
func (p plan) munged() string { return strings.ReplaceAll(p.latestVersion, "+", "-") }

func (p plan) jobName(nodeName string) string {
	n := "apply-" + p.name + "-on-" + nodeName + "-with-" + p.hash()
	if len(n) > 57 {
		n = n[:57]
	}
	return n + "-" + hash(n)[:5]
}

func (p plan) jobLabels(nodeName string) map[string]string {
	return map[string]string{"plan.upgrade.cattle.io/" + p.name: p.hash(), "upgrade.cattle.io/controller": "system-upgrade-controller",
		"upgrade.cattle.io/node": nodeName, "upgrade.cattle.io/plan": p.name, "upgrade.cattle.io/version": p.munged()}
}

// job is the Plan's Job for one node. done: the time it completed (zero: still active).
func (p plan) job(nodeName, kubectl string, created, done time.Time) obj {
	name := p.jobName(nodeName)
	m := meta("Job", name, "system-upgrade", created, p.jobLabels(nodeName))
	m["annotations"] = map[string]string{"upgrade.cattle.io/ttl-seconds-after-finished": "900"}
	env := []obj{{"name": "SYSTEM_UPGRADE_NODE_NAME", "valueFrom": obj{"fieldRef": obj{"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
		{"name": "SYSTEM_UPGRADE_PLAN_NAME", "value": p.name}, {"name": "SYSTEM_UPGRADE_PLAN_LATEST_HASH", "value": p.hash()},
		{"name": "SYSTEM_UPGRADE_PLAN_LATEST_VERSION", "value": p.munged()}}
	up := container("upgrade", p.tagged(), nil)
	up["env"] = env
	var inits []obj
	if p.server {
		c := container("cordon", kubectl, nil)
		c["args"] = []string{"cordon", nodeName}
		inits = append(inits, c)
	} else {
		pr := container("prepare", p.tagged(), nil)
		pr["args"] = []string{"prepare", "k3s-server"}
		dr := container("drain", kubectl, nil)
		dr["args"] = []string{"drain", nodeName, "--pod-selector", "!upgrade.cattle.io/controller", "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--skip-wait-for-delete-timeout", "60"}
		inits = append(inits, pr, dr)
	}
	tpl := obj{"metadata": obj{"labels": p.jobLabels(nodeName)}, "spec": obj{
		"containers": []obj{up}, "initContainers": inits, "hostIPC": true, "hostNetwork": true, "hostPID": true,
		"restartPolicy": "Never", "serviceAccountName": "system-upgrade",
		"affinity": obj{"nodeAffinity": obj{"requiredDuringSchedulingIgnoredDuringExecution": obj{"nodeSelectorTerms": []obj{{"matchExpressions": []obj{{"key": "kubernetes.io/hostname", "operator": "In", "values": []string{nodeName}}}}}}}}}}
	st := obj{"startTime": ts(created), "active": 1}
	if !done.IsZero() {
		st = obj{"startTime": ts(created), "succeeded": 1, "completionTime": ts(done),
			"conditions": []obj{{"type": "Complete", "status": "True", "lastProbeTime": ts(done), "lastTransitionTime": ts(done)}}}
	}
	return obj{"apiVersion": "batch/v1", "kind": "Job", "metadata": m,
		"spec":   obj{"activeDeadlineSeconds": 900, "backoffLimit": 99, "completions": 1, "parallelism": 1, "template": tpl},
		"status": st}
}

// jobPod is the pod of a Plan's Job on a node.
func (p plan) jobPod(nodeName, kubectl string, created time.Time, initStatuses, statuses []obj, phase string) obj {
	job := p.jobName(nodeName)
	labels := p.jobLabels(nodeName)
	labels["job-name"] = job
	labels["batch.kubernetes.io/job-name"] = job
	up := container("upgrade", p.tagged(), nil)
	var inits []obj
	if p.server {
		inits = []obj{container("cordon", kubectl, nil)}
	} else {
		inits = []obj{container("prepare", p.tagged(), nil), container("drain", kubectl, nil)}
	}
	pd := pod{ns: "system-upgrade", name: job + "-" + hash(job + ts(created))[:5], ownerKind: "Job", owner: job, node: nodeName, created: created,
		labels: labels, containers: []obj{up}, initContainers: inits, statuses: statuses, initStatuses: initStatuses, phase: phase,
		conditions: podConds(phase == "Succeeded", created)}
	return pd.object()
}

// controller is system-upgrade-controller's Deployment and its settings ConfigMap.
func sucController(created time.Time, image, kubectl string) []obj {
	cm := obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("ConfigMap", "default-controller-env", "system-upgrade", created, nil),
		"data": obj{"SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS": "900", "SYSTEM_UPGRADE_JOB_BACKOFF_LIMIT": "99",
			"SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY": "Always", "SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE": kubectl,
			"SYSTEM_UPGRADE_JOB_PRIVILEGED": "true", "SYSTEM_UPGRADE_JOB_TTL_SECONDS_AFTER_FINISH": "900", "SYSTEM_UPGRADE_PLAN_POLLING_INTERVAL": "15m"}}
	d := deployment("system-upgrade", "system-upgrade-controller", created, image, nil, 1, true, "NewReplicaSetAvailable", created.Add(time.Minute))
	c := d["spec"].(obj)["template"].(obj)["spec"].(obj)["containers"].([]obj)[0]
	c["envFrom"] = []obj{{"configMapRef": obj{"name": "default-controller-env"}}}
	d["status"] = obj{"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
		"conditions": []obj{{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability.", "lastUpdateTime": ts(created), "lastTransitionTime": ts(created)}}}
	return []obj{cm, d}
}
