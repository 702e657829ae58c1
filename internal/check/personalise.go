package check

import (
	"strings"

	"github.com/unstick-dev/unstick/internal/finding"
)

// personalise fills the placeholders of a finding's remediation commands with what the
// finding knows — its object's namespace and name, and the values its check recorded in
// Vars — so the printed command is the one to run. Placeholders nothing knows stay as they
// are, for the operator to fill.
func personalise(f *finding.Finding) {
	vars := objectVars(f.Object)
	for k, v := range f.Vars {
		vars[k] = v
	}
	if len(vars) == 0 {
		return
	}
	// A key "name@word" fills <name> only in commands that contain word: <n+1> is the next
	// redeployAgentGeneration in one command and the next forceSyncGeneration in another.
	pairs := make([]string, 0, 2*len(vars))
	scoped := map[string][]string{}
	for k, v := range vars {
		if v == "" {
			continue
		}
		if name, word, ok := strings.Cut(k, "@"); ok {
			scoped[word] = append(scoped[word], "<"+name+">", v)
			continue
		}
		pairs = append(pairs, "<"+k+">", v)
	}
	r := strings.NewReplacer(pairs...)
	steps := make([]finding.Step, len(f.Remediation))
	for i, s := range f.Remediation {
		s.Commands = append([]string(nil), s.Commands...)
		for j, c := range s.Commands {
			for word, p := range scoped {
				if strings.Contains(c, word) {
					c = strings.NewReplacer(p...).Replace(c)
				}
			}
			s.Commands[j] = r.Replace(c)
		}
		steps[i] = s
	}
	f.Remediation = steps
}

// objectVars names the placeholders an object fills by its kind.
func objectVars(o finding.ObjectRef) map[string]string {
	v := map[string]string{}
	ns := o.Namespace
	if ns != "" {
		v["namespace"], v["ns"] = ns, ns
	}
	switch o.Kind {
	case "Pod":
		v["pod"] = o.Name
	case "Deployment":
		v["deployment"] = o.Name
	case "Job":
		v["job"] = o.Name
	case "Node":
		v["node"] = o.Name
	case "Cluster":
		if o.APIVersion == "fleet.cattle.io/v1alpha1" {
			v["fleet-namespace"], v["cluster"] = ns, o.Name
		}
	case "BundleDeployment":
		v["cluster-namespace"], v["bundledeployment"], v["bundle"] = ns, o.Name, o.Name
	case "Bundle":
		v["fleet-namespace"], v["bundle"] = ns, o.Name
	case "GitRepo":
		v["fleet-namespace"], v["gitrepo"] = ns, o.Name
	case "Plan":
		v["suc-namespace"], v["plan"] = ns, o.Name
	case "CustomResourceDefinition":
		v["crd"] = o.Name
	case "ResourceQuota":
		v["quota"] = o.Name
	}
	return v
}
