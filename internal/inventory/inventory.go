// Package inventory lists every image an upgrade depends on, and where it is used: the
// stages of system-upgrade-controller Plans (with the controller's kubectl image for drain and
// cordon), the controller itself, the Fleet agent and cattle-cluster-agent Deployments, and
// SUC Jobs. It is pure: it reads a snapshot. The CLI probes the references it returns before
// the checks run, and `unstick images` prints them.
package inventory

import (
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// Use is one place an image is used.
type Use struct {
	Ref     string `json:"ref"`     // the reference the container gets
	Written string `json:"written"` // as written in the object (an untagged Plan image, say)
	Cluster string `json:"cluster"`
	// Object is kind/namespace/name of the object that uses the image.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Where in the object: "prepare", "drain", "upgrade", "container fleet-agent", ...
	Where string `json:"where"`
	// Source says where a controller setting came from (drain/cordon images).
	Source string `json:"source,omitempty"`
	// PullSecrets are the imagePullSecrets that apply (in Namespace).
	PullSecrets []string `json:"pullSecrets,omitempty"`
	// Nodes are the nodes that would run it, with their platforms.
	Nodes []Node `json:"nodes,omitempty"`
	// AnyNode says the image must run on one of Nodes (a Deployment's pods land on some
	// eligible node), not on every one of them (a Plan runs on each selected node).
	AnyNode bool `json:"anyNode,omitempty"`
}

// Node is a node and its platform (kubernetes.io/os and kubernetes.io/arch labels, else
// status.nodeInfo).
type Node struct {
	Name string `json:"name"`
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

// NodeOf reads a node's platform.
func NodeOf(n *corev1.Node) Node {
	out := Node{Name: n.Name, OS: n.Labels[corev1.LabelOSStable], Arch: n.Labels[corev1.LabelArchStable]}
	if out.OS == "" {
		out.OS = n.Status.NodeInfo.OperatingSystem
	}
	if out.Arch == "" {
		out.Arch = n.Status.NodeInfo.Architecture
	}
	return out
}

// Controllers returns the system-upgrade-controller Deployments of a cluster, resolved.
func Controllers(c *snapshot.Cluster) []*suc.Controller {
	var out []*suc.Controller
	for _, d := range c.Deployments {
		if suc.IsController(d) {
			out = append(out, suc.ReadController(d, func(ns, name string) map[string]string {
				if cm, ok := c.Get("ConfigMap", ns, name).(*corev1.ConfigMap); ok {
					if cm.Data == nil {
						return map[string]string{}
					}
					return cm.Data
				}
				return nil
			}))
		}
	}
	return out
}

// ControllerFor returns the controller that handles Plans in namespace ns: the one in the same
// namespace, else the only one, else nil (the default settings apply).
func ControllerFor(c *snapshot.Cluster, ns string) *suc.Controller {
	ctrls := Controllers(c)
	for _, x := range ctrls {
		if x.Deployment.Namespace == ns {
			return x
		}
	}
	if len(ctrls) > 0 {
		return ctrls[0]
	}
	return nil
}

// Collect lists every use of an image an upgrade depends on, in a stable order.
func Collect(s *snapshot.Snapshot) []Use { return CollectFor(s, "") }

// CollectFor is Collect with Kubernetes upgrade Plans moved to target (when not empty): the
// images they would run for that version.
func CollectFor(s *snapshot.Snapshot, target string) []Use {
	var out []Use
	for _, c := range s.Clusters {
		out = append(out, clusterUses(c, target)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		for _, p := range [][2]string{{a.Cluster, b.Cluster}, {a.Ref, b.Ref}, {a.Kind, b.Kind}, {a.Namespace, b.Namespace}, {a.Name, b.Name}, {a.Where, b.Where}} {
			if p[0] != p[1] {
				return p[0] < p[1]
			}
		}
		return false
	})
	return out
}

// Refs are the distinct references of uses, sorted.
func Refs(uses []Use) []string {
	seen := map[string]bool{}
	var out []string
	for _, u := range uses {
		if !seen[u.Ref] {
			seen[u.Ref] = true
			out = append(out, u.Ref)
		}
	}
	sort.Strings(out)
	return out
}

func clusterUses(c *snapshot.Cluster, target string) []Use {
	var out []Use
	kubectlNodes := map[string]map[string]Node{} // controller namespace → nodes that drain/cordon
	for _, p := range c.Plans {
		ctrl := ControllerFor(c, p.Namespace)
		kubectl, source := ctrl.KubectlImage()
		nodes, _ := p.SelectedNodes(c.Nodes)
		var ns []Node
		for _, n := range nodes {
			ns = append(ns, NodeOf(n))
		}
		secrets := localRefs(p.Spec.ImagePullSecrets)
		for _, si := range p.ImagesFor(kubectl, p.VersionFor(target)) {
			u := Use{Ref: si.Image, Written: si.Spec, Cluster: c.Name, Kind: "Plan", Namespace: p.Namespace, Name: p.Name,
				Where: string(si.Stage), PullSecrets: secrets, Nodes: ns}
			if si.Stage == suc.StageDrain || si.Stage == suc.StageCordon {
				u.Source = source
				key := p.Namespace
				if ctrl != nil {
					key = ctrl.Deployment.Namespace
				}
				if kubectlNodes[key] == nil {
					kubectlNodes[key] = map[string]Node{}
				}
				for _, n := range ns {
					kubectlNodes[key][n.Name] = n
				}
			}
			out = append(out, u)
		}
	}
	for _, ctrl := range Controllers(c) {
		d := ctrl.Deployment
		out = append(out, deploymentUses(c, d)...)
		kubectl, source := ctrl.KubectlImage()
		var ns []Node
		for _, n := range kubectlNodes[d.Namespace] {
			ns = append(ns, n)
		}
		sort.Slice(ns, func(i, j int) bool { return ns[i].Name < ns[j].Name })
		out = append(out, Use{Ref: kubectl, Written: kubectl, Cluster: c.Name, Kind: "Deployment", Namespace: d.Namespace, Name: d.Name,
			Where: "setting " + suc.EnvKubectlImage, Source: source, PullSecrets: localRefs(d.Spec.Template.Spec.ImagePullSecrets), Nodes: ns})
	}
	for _, d := range c.Deployments {
		if isAgentDeployment(d) {
			out = append(out, deploymentUses(c, d)...)
		}
	}
	out = append(out, provisionedUses(c)...)
	for _, j := range c.Jobs {
		if j.Labels[suc.LabelPlan] == "" {
			continue
		}
		var ns []Node
		if n, ok := c.Get("Node", "", j.Labels[suc.LabelNode]).(*corev1.Node); ok {
			ns = []Node{NodeOf(n)}
		}
		spec := j.Spec.Template.Spec
		for _, ctr := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
			out = append(out, Use{Ref: ctr.Image, Written: ctr.Image, Cluster: c.Name, Kind: "Job", Namespace: j.Namespace, Name: j.Name,
				Where: "container " + ctr.Name, PullSecrets: localRefs(spec.ImagePullSecrets), Nodes: ns})
		}
	}
	return out
}

// isAgentDeployment reports the agents an upgrade moves: fleet-agent in the Fleet agent
// namespaces, cattle-cluster-agent in cattle-system.
func isAgentDeployment(d *appsv1.Deployment) bool {
	return (fleet.IsAgentNamespace(d.Namespace) && strings.HasPrefix(d.Name, "fleet-agent")) ||
		(d.Namespace == "cattle-system" && d.Name == "cattle-cluster-agent")
}

func deploymentUses(c *snapshot.Cluster, d *appsv1.Deployment) []Use {
	var out []Use
	spec := d.Spec.Template.Spec
	var ns []Node
	sel := labels.SelectorFromSet(spec.NodeSelector)
	for _, n := range c.Nodes {
		if sel.Matches(labels.Set(n.Labels)) {
			ns = append(ns, NodeOf(n))
		}
	}
	for _, ctr := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		out = append(out, Use{Ref: ctr.Image, Written: ctr.Image, Cluster: c.Name, Kind: "Deployment", Namespace: d.Namespace, Name: d.Name,
			Where: "container " + ctr.Name, PullSecrets: localRefs(spec.ImagePullSecrets), Nodes: ns, AnyNode: true})
	}
	return out
}

func localRefs(refs []corev1.LocalObjectReference) []string {
	var out []string
	for _, r := range refs {
		if r.Name != "" {
			out = append(out, r.Name)
		}
	}
	return out
}
