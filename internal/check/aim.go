package check

import (
	"regexp"
	"strings"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A printed command names the cluster it must run against: without --context, kubectl and
// helm act on whatever context is current, and a restart meant for one downstream cluster
// lands on another.

// managementCommand matches commands about what lives on the management cluster: Fleet's
// own resources and their CRDs, the fleet-crd release that installs them (Rancher installs
// it there only), Rancher's etcd snapshot records, and the Fleet controller.
var (
	managementCommand = regexp.MustCompile(`\b(clusters|bundles|bundledeployments|gitrepos|clusterregistrations|contents|clustergroups|bundlenamespacemappings)\.fleet\.cattle\.io\b|\betcdsnapshots\.rke\.cattle\.io\b|\bfleet-controller\b|\bfleet-crd\b` +
		// Rancher's own upgrade objects: provisioned clusters, their control planes, CAPI
		// machines and machine-plan Secrets (fleet-default, c-m-*), Rancher's cluster records.
		`|\b(clusters\.provisioning|rkecontrolplanes\.rke|rkebootstraps\.rke|clusters\.management|settings\.management)\.cattle\.io\b|\.cluster\.x-k8s\.io\b|-n (fleet-default|c-m-[a-z0-9]+)\b`)
	// A program starts a command: at its beginning or after a pipe, && or ;.
	programStart = regexp.MustCompile(`(^|\|\s*|&&\s*|;\s*)(kubectl|helm)( |$)`)
)

// target is the kubeconfig context a command goes to, and a note when that context is
// only a guess or unknown.
type target struct {
	context string
	// server goes with context as --server (helm: --kube-apiserver): a cluster reached
	// through Rancher's proxy with the credentials of a context for Rancher itself.
	server string
	// kubeconfig goes with context as --kubeconfig: the file the live read named.
	kubeconfig string
	note       string
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
		return target{context: name, note: "context " + name + " is the cluster's name: the input holds nothing about that cluster"}
	}
	return target{context: c.Context, server: c.ContextServer, kubeconfig: c.Kubeconfig}
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
	return target{context: "<management-context>", note: "<management-context>: the kubeconfig context of the Rancher management cluster (the input holds no single management cluster)"}
}

// aim adds --context (helm: --kube-context) to every kubectl and helm invocation of cmd.
// withManagement says the step is about the management cluster as a whole (it upgrades the
// fleet-crd release), so its helm commands go there too.
func (a aimer) aim(cmd string, withManagement bool) (string, string) {
	t := a.subject
	if managementCommand.MatchString(cmd) || withManagement && strings.HasPrefix(cmd, "helm ") {
		t = a.management
	}
	flag := map[string]string{"kubectl": "--context ", "helm": "--kube-context "}
	serverFlag := map[string]string{"kubectl": " --server ", "helm": " --kube-apiserver "}
	ctx := shellQuote(t.context)
	if strings.HasPrefix(t.context, "<") {
		ctx = t.context // a placeholder stays recognisable as one
	}
	out := programStart.ReplaceAllStringFunc(cmd, func(m string) string {
		sub := programStart.FindStringSubmatch(m)
		file, server := "", ""
		if t.kubeconfig != "" {
			file = "--kubeconfig " + shellQuote(t.kubeconfig) + " " // kubectl's and helm's flag alike
		}
		if t.server != "" {
			server = serverFlag[sub[2]] + shellQuote(t.server)
		}
		return sub[1] + sub[2] + " " + file + flag[sub[2]] + ctx + server + sub[3]
	})
	return out, t.note
}

// shellQuote quotes a context name for a POSIX shell when it holds anything but the
// characters kubeconfig names usually have: a bundle is untrusted input, and a pasted
// command must not run what a hostile name carries.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
