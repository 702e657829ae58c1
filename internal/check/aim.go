package check

import (
	"strings"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/shellcmd"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A printed command names the cluster it must run against: without --context, kubectl and
// helm act on whatever context is current, and a restart meant for one downstream cluster
// lands on another.

// managementCommand matches commands about what lives on the management cluster: Fleet's
// own resources and their CRDs, the fleet-crd release that installs them (Rancher installs
// it there only), Rancher's etcd snapshot records, and the Fleet controller.
var (
	managementCommand = lazyre.New(`\b(clusters|bundles|bundledeployments|gitrepos|clusterregistrations|contents|clustergroups|bundlenamespacemappings)\.fleet\.cattle\.io\b|\betcdsnapshots\.rke\.cattle\.io\b|\bfleet-controller\b|\bfleet-crd\b` +
		// Rancher's own upgrade objects: provisioned clusters, their control planes, CAPI
		// machines and machine-plan Secrets (fleet-default, c-m-*), Rancher's cluster records.
		`|\b(clusters\.provisioning|rkecontrolplanes\.rke|rkebootstraps\.rke|clusters\.management|settings\.management)\.cattle\.io\b|\.cluster\.x-k8s\.io\b|-n (fleet-default|c-m-[a-z0-9]+)\b` +
		// Rancher itself, which runs on the management cluster only.
		`|-n cattle-system rollout restart deployment/rancher(\s|$)`)
	// A program starts a command: at its beginning or after a pipe, && or ;.
	programStart = lazyre.New(`(^|\|\s*|&&\s*|;\s*)(kubectl|helm)( |$)`)
)

// target is the kubeconfig context a command goes to, and a note when that context is
// only a guess or unknown.
type target struct {
	shellcmd.Target
	note string
}

// aimer picks the context of each command of a finding.
type aimer struct {
	management, subject target
}

func newAimer(ix *snapIndex, f *finding.Finding) aimer {
	subj := subject(f)
	return aimer{subject: contextOf(ix.snap.Cluster(subj), subj), management: managementTarget(ix, f)}
}

func contextOf(c *snapshot.Cluster, name string) target {
	if c == nil {
		return target{Target: shellcmd.Target{Context: name}, note: "context " + name + " is the cluster's name: the input holds nothing about that cluster"}
	}
	if c.ContextSource == snapshot.ContextUnknown {
		return target{Target: shellcmd.Target{Placeholder: snapshot.ContextPlaceholder, Server: c.ContextServer, Kubeconfig: c.Kubeconfig},
			note: snapshot.ContextPlaceholder + ": the kubeconfig context of cluster " + c.Name + " (the bundle recorded none)"}
	}
	ctx := c.Context
	if ctx == "" {
		ctx = name
	}
	return target{Target: shellcmd.Target{Context: ctx, Server: c.ContextServer, Kubeconfig: c.Kubeconfig}}
}

// managementTarget is the management cluster of a finding: its own cluster when that is
// one, else the management cluster holding the Fleet Cluster of the cluster it is about,
// else the only management cluster of the input.
func managementTarget(ix *snapIndex, f *finding.Finding) target {
	s := ix.snap
	if c := s.Cluster(f.Cluster); c != nil && c.Role == snapshot.Management {
		return contextOf(c, f.Cluster)
	}
	if sc := s.Cluster(subject(f)); sc != nil && sc.FleetCluster != "" {
		if m := ix.fleetOwner[sc.FleetCluster]; m != nil {
			return contextOf(m, m.Name)
		}
	}
	if mgmt := ix.management; len(mgmt) == 1 {
		return contextOf(mgmt[0], mgmt[0].Name)
	}
	return target{Target: shellcmd.Target{Placeholder: "<management-context>"}, note: "<management-context>: the kubeconfig context of the Rancher management cluster (the input holds no single management cluster)"}
}

// aim adds --context (helm: --kube-context) to every kubectl and helm invocation of cmd.
// withManagement says the step is about the management cluster as a whole (it upgrades the
// fleet-crd release), so its helm commands go there too. A context, kubeconfig or server
// that cannot be printed safely is the error.
func (a aimer) aim(cmd string, withManagement bool) (string, string, error) {
	t := a.subject
	if managementCommand().MatchString(cmd) || withManagement && strings.HasPrefix(cmd, "helm ") {
		t = a.management
	}
	flags := map[string]string{}
	for _, prog := range []string{"kubectl", "helm"} {
		f, err := t.Flags(prog)
		if err != nil {
			return "", "", err
		}
		flags[prog] = f
	}
	out := programStart().ReplaceAllStringFunc(cmd, func(m string) string {
		sub := programStart().FindStringSubmatch(m)
		return sub[1] + sub[2] + " " + flags[sub[2]] + sub[3]
	})
	return out, t.note, nil
}
