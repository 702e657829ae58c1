package check

import (
	"slices"
	"sort"
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
	// Scoped placeholders are filled first, then the others, each in one pass over the
	// command (a fleet-wide scan personalises tens of thousands of findings: no Replacer is
	// built per finding).
	var words []string
	for k, v := range vars {
		if _, word, ok := strings.Cut(k, "@"); ok && v != "" && !slices.Contains(words, word) {
			words = append(words, word)
		}
	}
	sort.Strings(words)
	steps := make([]finding.Step, len(f.Remediation))
	for i, s := range f.Remediation {
		s.Commands = append([]string(nil), s.Commands...)
		for j, c := range s.Commands {
			for _, word := range words {
				if strings.Contains(c, word) {
					c = fill(c, func(name string) string { return vars[name+"@"+word] })
				}
			}
			s.Commands[j] = fill(c, func(name string) string {
				if strings.Contains(name, "@") {
					return ""
				}
				return vars[name]
			})
		}
		steps[i] = s
	}
	f.Remediation = steps
}

// fill replaces every <name> in s for which value returns a non-empty string, in one pass:
// replaced text is not read again, and an unknown <...> is left as it is.
func fill(s string, value func(name string) string) string {
	var b strings.Builder
	done, changed := 0, false // s[:done] is in b once something changed
	for i := 0; i < len(s); {
		k := strings.IndexByte(s[i:], '<')
		if k < 0 {
			break
		}
		open := i + k
		e := strings.IndexByte(s[open+1:], '>')
		if e < 0 {
			break
		}
		end := open + 1 + e
		if v := value(s[open+1 : end]); v != "" {
			b.WriteString(s[done:open])
			b.WriteString(v)
			done, i, changed = end+1, end+1, true
			continue
		}
		i = open + 1
	}
	if !changed {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
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
