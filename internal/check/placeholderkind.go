package check

import "github.com/unstick-dev/unstick/internal/shellcmd"

// placeholderKinds says what each placeholder of the catalogue's commands stands for, so that
// the value filled in is checked against that kind's rule before it is printed: a namespace
// is an RFC 1123 label, a release name follows Helm's rule, a revision is a number. A
// placeholder not listed takes shellcmd.Word, the narrowest rule that still fits versions,
// paths and digests.
var placeholderKinds = map[string]shellcmd.Kind{
	"namespace": shellcmd.Namespace, "ns": shellcmd.Namespace, "fleet-namespace": shellcmd.Namespace,
	"cluster-namespace": shellcmd.Namespace, "suc-namespace": shellcmd.Namespace, "rancher-namespace": shellcmd.Namespace,
	"pdb-namespace": shellcmd.Namespace, "agent-namespace": shellcmd.Namespace, "management-cluster-id": shellcmd.Namespace,

	"release": shellcmd.Release, "crd-release": shellcmd.Release,

	"revision": shellcmd.Integer, "rev": shellcmd.Integer, "last-deployed-revision": shellcmd.Integer,
	"n+1": shellcmd.Integer, "n": shellcmd.Integer, "seconds": shellcmd.Integer,

	"cluster": shellcmd.Name, "pod": shellcmd.Name, "deployment": shellcmd.Name, "job": shellcmd.Name,
	"node": shellcmd.Name, "bundle": shellcmd.Name, "bundledeployment": shellcmd.Name, "gitrepo": shellcmd.Name, "dependency": shellcmd.Name,
	"repo": shellcmd.Name, "plan": shellcmd.Name, "crd": shellcmd.Name, "quota": shellcmd.Name,
	"content": shellcmd.Name, "pdb": shellcmd.Name, "machine": shellcmd.Name, "plan-secret": shellcmd.Name,
	"rancher-cluster": shellcmd.Name, "serviceaccount": shellcmd.Name, "sa": shellcmd.Name,
	"secret": shellcmd.Name, "name": shellcmd.Name, "workload": shellcmd.Name, "webhook": shellcmd.Name, "group": shellcmd.Name,

	"container": shellcmd.DNSLabel, "workload-kind": shellcmd.DNSLabel, "plural": shellcmd.DNSLabel, "storage-version": shellcmd.DNSLabel,

	"group-version": shellcmd.GroupVersion, "replacement": shellcmd.GroupVersion,

	"image": shellcmd.Image, "verified-image": shellcmd.Image, "verified-kubectl-image": shellcmd.Image,
	"multi-arch-image": shellcmd.Image, "mirrored-image": shellcmd.Image, "existing-image": shellcmd.Image,

	"hash": shellcmd.LabelValue, "latestHash": shellcmd.LabelValue, "status.latestHash": shellcmd.LabelValue,
	"key": shellcmd.LabelKey,
}

// placeholderKind is the kind of the value that fills <name>.
func placeholderKind(name string) shellcmd.Kind {
	if k, ok := placeholderKinds[name]; ok {
		return k
	}
	return shellcmd.Word
}
