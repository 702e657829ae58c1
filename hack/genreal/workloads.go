package main

import (
	"time"
)

// pod is a core/v1 Pod owned by a ReplicaSet or a Job.
type pod struct {
	ns, name         string
	ownerKind, owner string
	node             string
	created          time.Time
	labels           map[string]string
	containers       []obj // spec containers
	initContainers   []obj
	statuses         []obj // containerStatuses
	initStatuses     []obj
	phase            string
	conditions       []obj
	deleted          time.Time
	grace            int
}

func (p pod) object() obj {
	m := meta("Pod", p.name, p.ns, p.created, p.labels)
	if p.owner != "" {
		api := "apps/v1"
		if p.ownerKind == "Job" {
			api = "batch/v1"
		}
		m["ownerReferences"] = []obj{{"apiVersion": api, "kind": p.ownerKind, "name": p.owner, "uid": uid(p.ownerKind + "/" + p.ns + "/" + p.owner), "controller": true, "blockOwnerDeletion": true}}
	}
	if !p.deleted.IsZero() {
		m["deletionTimestamp"] = ts(p.deleted)
		m["deletionGracePeriodSeconds"] = p.grace
	}
	spec := obj{"containers": p.containers, "restartPolicy": "Always", "serviceAccountName": "default", "terminationGracePeriodSeconds": 30}
	if p.ownerKind == "Job" {
		spec["restartPolicy"] = "Never"
	}
	if len(p.initContainers) > 0 {
		spec["initContainers"] = p.initContainers
	}
	if p.node != "" {
		spec["nodeName"] = p.node
	}
	st := obj{"phase": p.phase, "qosClass": "Burstable"}
	if p.conditions != nil {
		st["conditions"] = p.conditions
	}
	if p.statuses != nil {
		st["containerStatuses"] = p.statuses
	}
	if p.initStatuses != nil {
		st["initContainerStatuses"] = p.initStatuses
	}
	if p.node != "" {
		st["startTime"] = ts(p.created.Add(2 * time.Second))
		st["hostIP"] = "10.20.0.21"
	}
	return obj{"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": spec, "status": st}
}

func container(name, image string, requests obj) obj {
	c := obj{"name": name, "image": image, "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
	if requests != nil {
		c["resources"] = requests
	} else {
		c["resources"] = obj{}
	}
	return c
}

func running(name, image string, since time.Time, restarts int, last obj) obj {
	s := obj{"name": name, "image": image, "imageID": "docker.io/" + image + "@sha256:" + hash(image), "ready": true, "started": true,
		"restartCount": restarts, "containerID": "containerd://" + hash(name+ts(since)), "state": obj{"running": obj{"startedAt": ts(since)}}, "lastState": obj{}}
	if last != nil {
		s["lastState"] = obj{"terminated": last}
	}
	return s
}

func waiting(name, image, reason, msg string, restarts int, last obj) obj {
	w := obj{"reason": reason}
	if msg != "" {
		w["message"] = msg
	}
	s := obj{"name": name, "image": image, "imageID": "", "ready": false, "started": false, "restartCount": restarts,
		"state": obj{"waiting": w}, "lastState": obj{}}
	if last != nil {
		s["lastState"] = obj{"terminated": last}
		s["imageID"] = "docker.io/" + image + "@sha256:" + hash(image)
	}
	return s
}

func terminated(reason string, code int, started, finished time.Time) obj {
	return obj{"reason": reason, "exitCode": code, "startedAt": ts(started), "finishedAt": ts(finished), "containerID": "containerd://" + hash(reason+ts(started))}
}

func podConds(ready bool, at time.Time) []obj {
	st := "True"
	if !ready {
		st = "False"
	}
	return []obj{
		{"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(at)},
		{"type": "Initialized", "status": "True", "lastTransitionTime": ts(at)},
		{"type": "ContainersReady", "status": st, "lastTransitionTime": ts(at)},
		{"type": "Ready", "status": st, "lastTransitionTime": ts(at)},
	}
}

func pendingConds(at time.Time, msg string) []obj {
	return []obj{{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg, "lastTransitionTime": ts(at)}}
}

// deployment is an apps/v1 Deployment with its current ReplicaSet.
func deployment(ns, name string, created time.Time, image string, requests obj, gen int, available bool, progressing string, at time.Time) obj {
	labels := map[string]string{"app": name}
	availStatus := "True"
	if !available {
		availStatus = "False"
	}
	m := meta("Deployment", name, ns, created, labels)
	m["generation"] = gen
	return obj{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": m,
		"spec": obj{"replicas": 1, "selector": obj{"matchLabels": labels}, "progressDeadlineSeconds": 600,
			"template": obj{"metadata": obj{"labels": labels}, "spec": obj{"containers": []obj{container(name, image, requests)}}}},
		"status": obj{"observedGeneration": gen, "replicas": 2, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1, "unavailableReplicas": 1,
			"conditions": []obj{
				{"type": "Available", "status": availStatus, "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability.", "lastUpdateTime": ts(at), "lastTransitionTime": ts(at)},
				{"type": "Progressing", "status": "True", "reason": progressing, "message": "ReplicaSet \"" + name + "-" + hash(name + "rs" + string(rune('0'+gen)))[:10] + "\" is progressing.", "lastUpdateTime": ts(at), "lastTransitionTime": ts(created)},
			}}}
}

func replicaSet(ns, deploy, hashSfx string, created time.Time, image string, requests obj, revision string, replicas int) obj {
	name := deploy + "-" + hashSfx
	labels := map[string]string{"app": deploy, "pod-template-hash": hashSfx}
	m := meta("ReplicaSet", name, ns, created, labels)
	m["annotations"] = map[string]string{"deployment.kubernetes.io/revision": revision}
	m["ownerReferences"] = []obj{{"apiVersion": "apps/v1", "kind": "Deployment", "name": deploy, "uid": uid("Deployment/" + ns + "/" + deploy), "controller": true, "blockOwnerDeletion": true}}
	return obj{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": m,
		"spec":   obj{"replicas": replicas, "selector": obj{"matchLabels": labels}, "template": obj{"metadata": obj{"labels": labels}, "spec": obj{"containers": []obj{container(deploy, image, requests)}}}},
		"status": obj{"replicas": replicas, "observedGeneration": 1}}
}
