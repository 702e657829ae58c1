package main

import (
	"fmt"
	"strings"
	"time"
)

// pullNotFound is containerd's error for a tag the registry does not have, as the kubelet's
// Failed event carries it.
func pullNotFound(image string) string {
	ref := image
	if strings.Count(strings.SplitN(image, "/", 2)[0], ".") == 0 {
		ref = "docker.io/" + image
	}
	return fmt.Sprintf(`Failed to pull image %q: rpc error: code = NotFound desc = failed to pull and unpack image %q: failed to resolve reference %q: %s: not found`, image, ref, ref, ref)
}

type sucCase struct {
	dir, src, desc string
	plan           plan
	kubectl        string
	stuckNode      string
	cordoned       bool
	kubelet        string
}

// sucImageMissing: a Plan's Job on one node sits in ImagePullBackOff on a tag that does not exist.
func sucImageMissing(c sucCase) *scenario {
	s := newScenario(c.dir, c.src, c.desc)
	s.expect.RootCauses = []string{"suc/image-missing"}
	s.expect.Findings = []string{"image/pull-not-found"}
	s.expect.Forbid = []string{"suc/image-arch", "suc/controller-image", "suc/image-floating", "suc/job-stale-spec"}
	s.cluster("homelab", "downstream")
	p := c.plan
	started := ago(2*time.Hour + 13*time.Minute)
	p.applying = []string{c.stuckNode}
	p.complete = cond("Complete", "False", started, "SyncJob", "")
	p.created = ago(20 * 24 * time.Hour)
	s.add("system-upgrade/plans.yaml", p.object())
	s.add("system-upgrade/controller.yaml", sucController(ago(200*24*time.Hour), "rancher/system-upgrade-controller:v0.14.2", c.kubectl)...)
	s.add("system-upgrade/jobs.yaml", p.job(c.stuckNode, c.kubectl, started, time.Time{}))
	img := p.tagged()
	backoff := fmt.Sprintf("Back-off pulling image %q", img)
	var inits, conts []obj
	if p.server {
		inits = []obj{obj{"name": "cordon", "image": c.kubectl, "ready": true, "restartCount": 0, "state": obj{"terminated": terminated("Completed", 0, started.Add(5*time.Second), started.Add(7*time.Second))}}}
		conts = []obj{waiting("upgrade", img, "ImagePullBackOff", backoff, 0, nil)}
	} else {
		inits = []obj{waiting("prepare", img, "ImagePullBackOff", backoff, 0, nil), waiting("drain", c.kubectl, "PodInitializing", "", 0, nil)}
		conts = []obj{waiting("upgrade", img, "PodInitializing", "", 0, nil)}
	}
	podObj := p.jobPod(c.stuckNode, c.kubectl, started.Add(time.Second), inits, conts, "Pending")
	s.add("system-upgrade/pods.yaml", podObj)
	podName := podObj["metadata"].(obj)["name"].(string)
	s.add("system-upgrade/events.yaml",
		event{ns: "system-upgrade", kind: "Pod", name: podName, reason: "Failed", msg: pullNotFound(img), first: started.Add(9 * time.Second), last: ago(4 * time.Minute), count: 31, component: "kubelet"}.object(),
		event{ns: "system-upgrade", kind: "Pod", name: podName, reason: "Failed", msg: "Error: ErrImagePull", first: started.Add(9 * time.Second), last: ago(4 * time.Minute), count: 31, component: "kubelet"}.object(),
		event{ns: "system-upgrade", kind: "Pod", name: podName, reason: "BackOff", msg: backoff, typ: "Normal", first: started.Add(40 * time.Second), last: ago(30 * time.Second), count: 580, component: "kubelet"}.object(),
	)
	var ns []obj
	for _, n := range []node{
		{name: "homelab-server-1", roles: []string{"control-plane", "master", "etcd"}, created: ago(400 * 24 * time.Hour), kubelet: c.kubelet, arch: "amd64", cpu: "4", mem: "16318012Ki", heartbeat: ago(20 * time.Second)},
		{name: "homelab-agent-1", roles: nil, created: ago(400 * 24 * time.Hour), kubelet: c.kubelet, arch: "amd64", cpu: "4", mem: "16318012Ki", heartbeat: ago(25 * time.Second)},
		{name: "homelab-agent-2", roles: nil, created: ago(400 * 24 * time.Hour), kubelet: c.kubelet, arch: "amd64", cpu: "4", mem: "16318012Ki", heartbeat: ago(15 * time.Second)},
	} {
		if n.name == c.stuckNode {
			n.unschedulable = c.cordoned
		}
		ns = append(ns, n.object())
	}
	s.add("nodes.yaml", ns...)
	return s
}

// sucDone: the same Plan after its image exists: the Job completed minutes ago and waits for its
// TTL, the node is uncordoned and carries the Plan's hash.
func sucDone(dir, src, desc string, p plan, kubectl, doneNode, kubelet string, doneAgo time.Duration) *scenario {
	s := newScenario(dir, src, desc)
	s.expect.Forbid = []string{"suc/image-missing", "image/pull-not-found", "suc/plan-stuck", "suc/node-left-cordoned", "suc/job-deadline", "suc/node-label-blocks-rerun"}
	s.expect.MaxSeverity = "info"
	s.cluster("homelab", "downstream")
	done := ago(doneAgo)
	started := done.Add(-3 * time.Minute)
	p.complete = cond("Complete", "True", done, "Complete", "")
	p.created = ago(20 * 24 * time.Hour)
	s.add("system-upgrade/plans.yaml", p.object())
	s.add("system-upgrade/controller.yaml", sucController(ago(200*24*time.Hour), "rancher/system-upgrade-controller:v0.14.2", kubectl)...)
	s.add("system-upgrade/jobs.yaml", p.job(doneNode, kubectl, started, done))
	img := p.tagged()
	var inits []obj
	if p.server {
		inits = []obj{obj{"name": "cordon", "image": kubectl, "ready": true, "restartCount": 0, "state": obj{"terminated": terminated("Completed", 0, started.Add(5*time.Second), started.Add(7*time.Second))}}}
	} else {
		inits = []obj{
			obj{"name": "prepare", "image": img, "ready": true, "restartCount": 0, "state": obj{"terminated": terminated("Completed", 0, started.Add(20*time.Second), started.Add(40*time.Second))}},
			obj{"name": "drain", "image": kubectl, "ready": true, "restartCount": 0, "state": obj{"terminated": terminated("Completed", 0, started.Add(41*time.Second), started.Add(90*time.Second))}},
		}
	}
	conts := []obj{obj{"name": "upgrade", "image": img, "ready": false, "restartCount": 0, "state": obj{"terminated": terminated("Completed", 0, started.Add(95*time.Second), done)}}}
	s.add("system-upgrade/pods.yaml", p.jobPod(doneNode, kubectl, started.Add(time.Second), inits, conts, "Succeeded"))
	var ns []obj
	for _, n := range []node{
		{name: "homelab-server-1", roles: []string{"control-plane", "master", "etcd"}, created: ago(400 * 24 * time.Hour), kubelet: kubelet, arch: "amd64", cpu: "4", mem: "16318012Ki", heartbeat: ago(20 * time.Second)},
		{name: "homelab-agent-1", created: ago(400 * 24 * time.Hour), kubelet: kubelet, arch: "amd64", cpu: "4", mem: "16318012Ki", heartbeat: ago(25 * time.Second)},
		{name: "homelab-agent-2", created: ago(400 * 24 * time.Hour), kubelet: kubelet, arch: "amd64", cpu: "4", mem: "16318012Ki", heartbeat: ago(15 * time.Second)},
	} {
		if n.name == doneNode {
			n.labels = map[string]string{"plan.upgrade.cattle.io/" + p.name: p.hash()}
		}
		ns = append(ns, n.object())
	}
	s.add("nodes.yaml", ns...)
	return s
}

func sucScenarios() []*scenario {
	var out []*scenario
	// k3s#11416: the server Plan resolves v1.31.3+k3s1 from the latest channel before its
	// rancher/k3s-upgrade image was published; the server node is cordoned and the Job pulls a tag
	// that does not exist.
	server := plan{name: "server-plan", channel: "https://update.k3s.io/v1-release/channels/latest", image: "rancher/k3s-upgrade", latestVersion: "v1.31.3+k3s1", server: true}
	out = append(out, sucImageMissing(sucCase{dir: "suc/real-k3s11416-upgrade-image-missing-positive", src: "https://github.com/k3s-io/k3s/issues/11416", desc: `
The latest channel resolved v1.31.3+k3s1 before rancher/k3s-upgrade:v1.31.3-k3s1 was published:
the controller cordoned the server node and its Job has sat in ImagePullBackOff ("not found")
for 2h13m. suc/image-missing is the root cause, the pod's pull error its symptom.`,
		plan: server, kubectl: "rancher/kubectl:v1.31.2", stuckNode: "homelab-server-1", cordoned: true, kubelet: "v1.31.2+k3s1"}))
	out = append(out, sucDone("suc/real-k3s11416-upgrade-image-missing-healthy", "https://github.com/k3s-io/k3s/issues/11416", `
Look-alike a day later: the image was published, the server's Job completed 6 minutes ago and
waits out its 900 s TTL, the node is uncordoned, runs v1.31.3+k3s1 and carries the Plan's hash.
A completed SUC Job within its TTL is not a stuck upgrade.`, server, "rancher/kubectl:v1.31.2", "homelab-server-1", "v1.31.3+k3s1", 6*time.Minute))

	// k3s#12971: the v1.33 channel moved to v1.33.5+k3s1, whose upgrade image was missing; the
	// agent Plan's prepare step cannot pull it.
	agent := plan{name: "agent-plan", channel: "https://update.k3s.io/v1-release/channels/v1.33", image: "rancher/k3s-upgrade", latestVersion: "v1.33.5+k3s1"}
	out = append(out, sucImageMissing(sucCase{dir: "suc/real-k3s12971-channel-image-missing-positive", src: "https://github.com/k3s-io/k3s/issues/12971", desc: `
The v1.33 channel resolves v1.33.5+k3s1, and docker.io/rancher/k3s-upgrade:v1.33.5-k3s1 does not
exist: the agent Plan's prepare container on homelab-agent-1 has been in ImagePullBackOff for
2h13m. The image, not the node, is the root cause.`,
		plan: agent, kubectl: "rancher/kubectl:v1.33.4", stuckNode: "homelab-agent-1", kubelet: "v1.33.4+k3s1"}))
	out = append(out, sucDone("suc/real-k3s12971-channel-image-missing-healthy", "https://github.com/k3s-io/k3s/issues/12971", `
Look-alike: the channel still pointed at v1.33.4+k3s1, whose image exists; the agent Plan's Job
on homelab-agent-1 finished 2 minutes ago (the controller will move to the next node on its
next sync) and the node carries the Plan's hash.`, plan{name: "agent-plan", channel: "https://update.k3s.io/v1-release/channels/v1.33", image: "rancher/k3s-upgrade", latestVersion: "v1.33.4+k3s1"}, "rancher/kubectl:v1.33.4", "homelab-agent-1", "v1.33.4+k3s1", 2*time.Minute))

	// rke2#2737: rancher/rke2-upgrade:v1.22.8-rke2r1 was not published yet, but the controller
	// created the Job (and cordoned the node with kubectl v1.18.20).
	rke2 := plan{name: "server-plan", version: "v1.22.8+rke2r1", image: "rancher/rke2-upgrade", latestVersion: "v1.22.8+rke2r1", server: true}
	out = append(out, sucImageMissing(sucCase{dir: "suc/real-rke2-2737-upgrade-image-missing-positive", src: "https://github.com/rancher/rke2/issues/2737", desc: `
The server Plan asks for v1.22.8+rke2r1 before rancher/rke2-upgrade:v1.22.8-rke2r1 existed;
the controller created the Job anyway and cordoned the node: the upgrade container is in
ImagePullBackOff ("not found").`,
		plan: rke2, kubectl: "rancher/kubectl:v1.22.8", stuckNode: "homelab-server-1", cordoned: true, kubelet: "v1.22.7+rke2r2"}))
	out = append(out, sucDone("suc/real-rke2-2737-upgrade-image-missing-healthy", "https://github.com/rancher/rke2/issues/2737", `
Look-alike once the image was published: the server's Job completed 10 minutes ago (within its
TTL), the node runs v1.22.8+rke2r1, is uncordoned and carries the Plan's hash.`, rke2, "rancher/kubectl:v1.22.8", "homelab-server-1", "v1.22.8+rke2r1", 10*time.Minute))

	// system-upgrade-controller#302: Rancher stopped publishing the :latest tag of the controller
	// image; a controller Deployment on :latest cannot start again.
	for _, positive := range []bool{true, false} {
		const src = "https://github.com/rancher/system-upgrade-controller/issues/302"
		var s *scenario
		img := "rancher/system-upgrade-controller:latest"
		if positive {
			s = newScenario("suc/real-suc302-controller-latest-gone-positive", src, `
The controller Deployment runs rancher/system-upgrade-controller:latest, a tag that no longer
exists: after a node reboot its pod has sat in ImagePullBackOff ("not found") for 69 minutes,
and no Plan moves.`)
			s.expect.RootCauses = []string{"image/pull-not-found"}
			s.expect.Forbid = []string{"image/pull-auth", "image/pull-network", "suc/image-missing"}
		} else {
			s = newScenario("suc/real-suc302-controller-latest-gone-healthy", src, `
Look-alike: the controller pinned to v0.13.4, the fix from the report; its pod runs.`)
			s.expect.Forbid = []string{"image/pull-not-found", "suc/image-missing"}
			s.expect.MaxSeverity = "warning"
			img = "rancher/system-upgrade-controller:v0.13.4"
		}
		s.cluster("hetzner-1", "downstream")
		objs := sucController(ago(200*24*time.Hour), img, "rancher/kubectl:v1.30.3")
		rsHash := hash(img)[:10]
		name := "system-upgrade-controller-" + rsHash + "-" + hash(img + "pod")[:5]
		created := ago(69 * time.Minute)
		var st obj
		if positive {
			st = waiting("system-upgrade-controller", img, "ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q", img), 0, nil)
		} else {
			st = running("system-upgrade-controller", img, created.Add(20*time.Second), 0, nil)
		}
		p := pod{ns: "system-upgrade", name: name, ownerKind: "ReplicaSet", owner: "system-upgrade-controller-" + rsHash, node: "hetzner-1-master1", created: created,
			labels:     map[string]string{"app": "system-upgrade-controller", "pod-template-hash": rsHash},
			containers: []obj{container("system-upgrade-controller", img, nil)}, statuses: []obj{st}, phase: "Pending", conditions: podConds(!positive, created)}
		if !positive {
			p.phase = "Running"
		}
		objs = append(objs, replicaSet("system-upgrade", "system-upgrade-controller", rsHash, ago(200*24*time.Hour), img, nil, "1", 1), p.object())
		s.add("system-upgrade/controller.yaml", objs...)
		if positive {
			s.add("system-upgrade/events.yaml",
				event{ns: "system-upgrade", kind: "Pod", name: name, reason: "Pulling", typ: "Normal", msg: fmt.Sprintf("Pulling image %q", img), first: created.Add(5 * time.Second), last: ago(6 * time.Minute), count: 15, component: "kubelet"}.object(),
				event{ns: "system-upgrade", kind: "Pod", name: name, reason: "Failed", msg: pullNotFound(img), first: created.Add(7 * time.Second), last: ago(6 * time.Minute), count: 15, component: "kubelet"}.object(),
				event{ns: "system-upgrade", kind: "Pod", name: name, reason: "BackOff", typ: "Normal", msg: fmt.Sprintf("Back-off pulling image %q", img), first: created.Add(30 * time.Second), last: ago(20 * time.Second), count: 282, component: "kubelet"}.object())
		}
		out = append(out, s)
	}
	return out
}
