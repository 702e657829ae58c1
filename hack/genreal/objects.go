package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// obj is one Kubernetes object as kubectl get -o yaml shows it.
type obj = map[string]any

// hash gives stable fake identifiers (uids, hashes) from a seed, so regenerating a scenario
// changes nothing that its inputs did not change.
func hash(seed string) string {
	s := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(s[:])
}

func uid(seed string) string {
	h := hash("uid:" + seed)
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}

func rv(seed string) string {
	n, _ := strconv.ParseUint(hash("rv:" + seed)[:7], 16, 64)
	return strconv.FormatUint(n, 10)
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func meta(kind, name, ns string, created time.Time, labels map[string]string) obj {
	m := obj{"name": name, "creationTimestamp": ts(created), "uid": uid(kind + "/" + ns + "/" + name), "resourceVersion": rv(kind + ns + name)}
	if ns != "" {
		m["namespace"] = ns
	}
	if len(labels) > 0 {
		m["labels"] = labels
	}
	return m
}

func cond(typ, status string, at time.Time, reason, msg string) obj {
	c := obj{"type": typ, "status": status, "lastUpdateTime": ts(at)}
	if reason != "" {
		c["reason"] = reason
	}
	if msg != "" {
		c["message"] = msg
	}
	return c
}

// fleetCluster is a Fleet Cluster object on the management cluster.
type fleetCluster struct {
	ns, name, display string
	created, lastSeen time.Time // zero lastSeen: WaitCheckIn
	readyMsg          string    // non-empty: Ready=False with this message
	readyAt           time.Time
	state             string
}

func (c fleetCluster) clusterNS() string {
	return "cluster-" + c.ns + "-" + c.name + "-" + hash(c.ns + c.name)[:12]
}

func (c fleetCluster) agentNS() string {
	if c.ns == "fleet-local" {
		return "cattle-fleet-local-system"
	}
	return "cattle-fleet-system"
}

func (c fleetCluster) object() obj {
	labels := map[string]string{"objectset.rio.cattle.io/hash": hash("os" + c.name)[:40]}
	if c.display != "" {
		labels["management.cattle.io/cluster-display-name"] = c.display
		labels["management.cattle.io/cluster-name"] = c.name
		labels["provider.cattle.io"] = "rke2"
	} else {
		labels["name"] = c.name
	}
	ready := cond("Ready", "True", c.readyAt, "", "")
	display := obj{"readyBundles": "2/2"}
	if c.readyMsg != "" {
		ready = cond("Ready", "False", c.readyAt, "", c.readyMsg)
		display = obj{"readyBundles": "1/2", "state": c.state}
	}
	agent := obj{"namespace": c.agentNS()}
	if !c.lastSeen.IsZero() {
		agent["lastSeen"] = ts(c.lastSeen)
	} else {
		display["state"] = "WaitCheckIn"
	}
	return obj{
		"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
		"metadata": meta("Cluster", c.name, c.ns, c.created, labels),
		"spec": obj{"clientID": hash("client" + c.name)[:50], "kubeConfigSecret": c.name + "-kubeconfig",
			"kubeConfigSecretNamespace": c.ns, "redeployAgentGeneration": 1},
		"status": obj{
			"agent": agent, "agentDeployedGeneration": 1, "agentMigrated": true, "agentNamespaceMigrated": true,
			"cattleNamespaceMigrated": true, "agentTLSMode": "system-store",
			"apiServerURL": "https://rancher.example.com", "apiServerCAHash": hash("ca")[:56],
			"conditions": []obj{cond("Processed", "True", c.created, "", ""), cond("Imported", "True", c.created.Add(2*time.Minute), "", ""), ready},
			"display":    display, "namespace": c.clusterNS(), "garbageCollectionInterval": "15m0s",
		},
	}
}

// bundleDeployment is a BundleDeployment in a cluster's namespace.
type bundleDeployment struct {
	cluster          fleetCluster
	bundle, bundleNS string
	defaultNS        string
	created          time.Time
	// state: "ready", "errApplied" (msg), "waitApplied", "notReady" (msg), "modified" (msg)
	state string
	msg   string
	at    time.Time // when the state began (conditions' lastUpdateTime)
	gen   int
}

func (b bundleDeployment) object() obj {
	content := "s-" + hash("content" + b.bundle + strconv.Itoa(b.gen))[:61]
	dep := content + ":" + hash("opts"+b.bundle)
	applied := dep
	conds := []obj{cond("Installed", "True", b.at, "", ""), cond("Deployed", "True", b.at, "", ""), cond("Ready", "True", b.at, "", ""), cond("Monitored", "True", b.at, "", "")}
	ready, nonModified := true, true
	display := obj{"deployed": "True", "monitored": "True"}
	switch b.state {
	case "errApplied":
		applied = "s-" + hash("content" + b.bundle + strconv.Itoa(b.gen-1))[:61] + ":" + hash("opts"+b.bundle)
		conds[1] = cond("Deployed", "False", b.at, "Error", b.msg)
		display = obj{"deployed": "Error: " + b.msg, "monitored": "True"}
	case "waitApplied":
		applied = "s-" + hash("content" + b.bundle + strconv.Itoa(b.gen-1))[:61] + ":" + hash("opts"+b.bundle)
	case "installRefused":
		// Fleet 0.16 when Helm refuses the install: Installed=False with Helm's error, no
		// release written, NotReady.
		ready = false
		conds[0] = cond("Installed", "False", b.at, "Error", b.msg)
		conds[2] = cond("Ready", "False", b.at, "Error", b.msg)
		display = obj{"deployed": "True", "monitored": "True", "state": "NotReady"}
	case "notReady":
		ready = false
		conds[2] = cond("Ready", "False", b.at, "Error", b.msg)
		display = obj{"deployed": "True", "monitored": "True", "state": "NotReady"}
	case "modified":
		nonModified = false
		display = obj{"deployed": "True", "monitored": "True", "state": "Modified"}
	}
	opts := obj{"defaultNamespace": b.defaultNS}
	if strings.HasPrefix(b.bundle, "fleet-agent") {
		opts["helm"] = obj{"takeOwnership": true}
	}
	labels := map[string]string{
		"fleet.cattle.io/bundle-name": b.bundle, "fleet.cattle.io/bundle-namespace": b.bundleNS,
		"fleet.cattle.io/cluster": b.cluster.name, "fleet.cattle.io/cluster-namespace": b.cluster.ns,
		"fleet.cattle.io/content-name": content, "fleet.cattle.io/managed": "true",
	}
	m := meta("BundleDeployment", b.bundle, b.cluster.clusterNS(), b.created, labels)
	m["generation"] = b.gen
	m["finalizers"] = []string{"fleet.cattle.io/bundle-deployment-finalizer"}
	return obj{
		"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment", "metadata": m,
		"spec": obj{"deploymentID": dep, "stagedDeploymentID": dep, "options": opts, "stagedOptions": opts},
		"status": obj{"appliedDeploymentID": applied, "conditions": conds, "display": display,
			"ready": ready, "nonModified": nonModified, "syncGeneration": 0},
	}
}

// helmRelease is one revision of a Helm release, stored as Helm's Secrets driver stores it.
type helmRelease struct {
	name, ns            string
	rev                 int
	status, description string
	chart, version, app string
	first, last         time.Time
	manifest            string
}

func (r helmRelease) object() obj {
	rel := obj{
		"name": r.name, "namespace": r.ns, "version": r.rev, "manifest": r.manifest, "config": obj{},
		"info": obj{"first_deployed": r.first.UTC().Format(time.RFC3339Nano), "last_deployed": r.last.UTC().Format(time.RFC3339Nano),
			"deleted": "", "description": r.description, "status": r.status},
		"chart": obj{"metadata": obj{"apiVersion": "v2", "name": r.chart, "version": r.version, "appVersion": r.app},
			"templates": []obj{}, "values": obj{}, "files": []obj{}},
	}
	js, _ := json.Marshal(rel)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(js)
	zw.Close()
	// Helm stores base64(gzip(json)); the API's own base64 of that string is what
	// `kubectl get secret -o yaml` shows.
	inner := base64.StdEncoding.EncodeToString(buf.Bytes())
	labels := map[string]string{"name": r.name, "owner": "helm", "status": r.status, "version": strconv.Itoa(r.rev),
		"modifiedAt": strconv.FormatInt(r.last.Unix(), 10)}
	return obj{
		"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
		"metadata": meta("Secret", fmt.Sprintf("sh.helm.release.v1.%s.v%d", r.name, r.rev), r.ns, r.last, labels),
		"data":     obj{"release": base64.StdEncoding.EncodeToString([]byte(inner))},
	}
}

// event is a core/v1 Event.
type event struct {
	ns, kind, name, reason, msg, typ, component string
	first, last                                 time.Time
	count                                       int
}

func (e event) object() obj {
	if e.typ == "" {
		e.typ = "Warning"
	}
	if e.count == 0 {
		e.count = 1
	}
	n := fmt.Sprintf("%s.%x", e.name, e.first.UnixNano())
	return obj{
		"apiVersion": "v1", "kind": "Event", "metadata": meta("Event", n, e.ns, e.first, nil),
		"involvedObject": obj{"apiVersion": "v1", "kind": e.kind, "name": e.name, "namespace": e.ns, "uid": uid(e.kind + "/" + e.ns + "/" + e.name)},
		"reason":         e.reason, "message": e.msg, "type": e.typ, "count": e.count,
		"firstTimestamp": ts(e.first), "lastTimestamp": ts(e.last),
		"source": obj{"component": e.component}, "reportingComponent": e.component,
	}
}

// node is a core/v1 Node.
type node struct {
	name          string
	roles         []string
	created       time.Time
	kubelet, arch string
	cpu, mem      string // allocatable
	unschedulable bool
	labels        map[string]string
	heartbeat     time.Time
}

func (n node) object() obj {
	labels := map[string]string{"kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": n.arch,
		"beta.kubernetes.io/arch": n.arch, "beta.kubernetes.io/os": "linux"}
	for _, r := range n.roles {
		labels["node-role.kubernetes.io/"+r] = "true"
	}
	for k, v := range n.labels {
		labels[k] = v
	}
	spec := obj{"podCIDR": "10.42.0.0/24"}
	if n.unschedulable {
		spec["unschedulable"] = true
		spec["taints"] = []obj{{"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "timeAdded": ts(n.heartbeat.Add(-time.Hour))}}
	}
	return obj{
		"apiVersion": "v1", "kind": "Node", "metadata": meta("Node", n.name, "", n.created, labels), "spec": spec,
		"status": obj{
			"allocatable": obj{"cpu": n.cpu, "memory": n.mem, "pods": "110", "ephemeral-storage": "95551679124"},
			"capacity":    obj{"cpu": n.cpu, "memory": n.mem, "pods": "110", "ephemeral-storage": "98497780Ki"},
			"conditions": []obj{{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
				"lastHeartbeatTime": ts(n.heartbeat), "lastTransitionTime": ts(n.created.Add(3 * time.Minute))}},
			"nodeInfo": obj{"architecture": n.arch, "kubeletVersion": n.kubelet, "kubeProxyVersion": n.kubelet,
				"operatingSystem": "linux", "osImage": "SUSE Linux Enterprise Server 15 SP6", "containerRuntimeVersion": "containerd://1.7.23-k3s2"},
		},
	}
}

func list(items ...obj) obj {
	return obj{"apiVersion": "v1", "kind": "List", "metadata": obj{"resourceVersion": ""}, "items": items}
}
