package check

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/inventory"
	"github.com/unstick-dev/unstick/internal/rancher"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// privateEvidence says why image r, used without a pull secret on cluster c, needs
// credentials, and false when the evidence says it does not or says nothing. Evidence comes
// first: a pull of the image that failed with an auth error (the registry asked for
// credentials); else a pod that runs the image with an imageID (the pull worked, so no alarm);
// else the image's registry is one the clusters are configured to pull their system images
// from (Rancher's system-default-registry, a cluster's machineGlobalConfig, a Fleet
// Cluster's privateRepoURL) and not a well-known public registry. A registry nothing tells
// about is not called private: most images come from public registries anyone can pull.
func privateEvidence(s *snapshot.Snapshot, c *snapshot.Cluster, r imageref.Ref) (finding.Evidence, bool) {
	if e, ok := pullAuthFailure(c, r); ok {
		return e, true
	}
	if pulledByRunningPod(c, r) || imageref.PublicRegistry(r.Registry) {
		return finding.Evidence{}, false
	}
	if src, ok := configuredRegistries(s)[r.Registry]; ok {
		return ev(src, "registry %s is configured as the registry the clusters pull from", r.Registry), true
	}
	return finding.Evidence{}, false
}

// sameImage reports whether an image as a container status or event names it is r (the
// runtime writes docker.io/rancher/x:v1 for rancher/x:v1).
func sameImageRef(s string, r imageref.Ref) bool {
	o, err := imageref.Parse(s)
	return err == nil && o.Name() == r.Name() && o.Tag == r.Tag && (r.Digest == "" || o.Digest == r.Digest)
}

// pullAuthFailure quotes a pull of r that the registry refused for want of credentials:
// a container waiting with ErrImagePull/ImagePullBackOff, or a pod's Failed event, whose
// message is an auth error ("401 Unauthorized", "pull access denied", "authentication
// required", "no basic auth credentials").
func pullAuthFailure(c *snapshot.Cluster, r imageref.Ref) (finding.Evidence, bool) {
	for _, p := range c.Pods {
		for _, cs := range allStatuses(p) {
			w := cs.State.Waiting
			if w == nil || !sameImageRef(cs.Image, r) || !isPullAuthError(w.Message) {
				continue
			}
			return ev(sourceOf(c, podRef(p)), "container %s %s: %s", cs.Name, w.Reason, firstLine(w.Message)), true
		}
	}
	for _, e := range c.Events {
		if e.InvolvedObject.Kind == "Pod" && e.Reason == "Failed" && mentionsImage(e.Message, r) && isPullAuthError(e.Message) {
			return ev(eventSource(e), "%s", firstLine(e.Message)), true
		}
	}
	return finding.Evidence{}, false
}

func isPullAuthError(msg string) bool {
	if msg == "" {
		return false
	}
	m, ok := classify.Classify(msg, classify.Status|classify.Event)
	return ok && m.ID == "image/pull-auth"
}

// mentionsImage reports whether a kubelet message ("Failed to pull image \"ref\": …") names r.
func mentionsImage(msg string, r imageref.Ref) bool {
	for _, q := range strings.Split(msg, `"`)[1:] {
		if sameImageRef(q, r) {
			return true
		}
	}
	return false
}

// pulledByRunningPod reports whether a Running pod on c runs r with an imageID: the node
// pulled it, whatever credentials it used.
func pulledByRunningPod(c *snapshot.Cluster, r imageref.Ref) bool {
	for _, p := range c.Pods {
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, cs := range allStatuses(p) {
			if cs.ImageID != "" && sameImageRef(cs.Image, r) {
				return true
			}
		}
	}
	return false
}

// configuredRegistries maps each registry the snapshot's clusters are configured to pull
// system or agent images from to where that is configured.
func configuredRegistries(s *snapshot.Snapshot) map[string]string {
	out := map[string]string{}
	add := func(value, source string) {
		if r, err := imageref.Parse(strings.TrimSuffix(value, "/") + "/x"); value != "" && err == nil {
			out[r.Registry] = source
		}
	}
	for _, c := range s.Clusters {
		add(inventory.RancherSetting(c, rancher.SettingSystemRegistry), fmt.Sprintf("%s setting %s", c.Name, rancher.SettingSystemRegistry))
		for _, pc := range c.OtherOf(rancher.GroupProvisioning, "Cluster") {
			add(rancher.String(pc.Object, "spec", "rkeConfig", "machineGlobalConfig", "system-default-registry"),
				sourceOf(c, ref(pc.APIVersion, pc.Kind, pc.Namespace, pc.Name))+" machineGlobalConfig")
		}
		for _, fc := range c.FleetClusters {
			add(fc.Spec.PrivateRepoURL, sourceOf(c, fleetClusterRef(fc))+" spec.privateRepoURL")
		}
	}
	return out
}
