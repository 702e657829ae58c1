package check

import (
	"slices"
	"sort"
	"strings"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/shellcmd"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// personalise fills the placeholders of a finding's remediation commands with what is known
// — its object's namespace and name, what the snapshot holds around it (its cluster's Fleet
// Cluster, the bundle's generation, the pod's Deployment) and the values its check recorded
// in Vars — and aims each command at its cluster with --context, so the printed command is
// the one to run. A placeholder nothing knows stays, and the step says in words what it
// stands for. Without a snapshot only the object and Vars are used and nothing is aimed.
func personalise(ix *snapIndex, f *finding.Finding) {
	p := newPersonaliser(ix, f)
	steps := make([]finding.Step, len(f.Remediation))
	for i, st := range f.Remediation {
		steps[i] = p.step(st)
	}
	f.Remediation = steps
}

// personaliser holds what filling one finding's commands needs: the values known, the words
// that scope some of them, the aim of its commands, and why Fleet's commands do not apply.
type personaliser struct {
	ix       *snapIndex
	f        *finding.Finding
	vars     map[string]string
	words    []string
	aim      *aimer
	notFleet string
}

func newPersonaliser(ix *snapIndex, f *finding.Finding) *personaliser {
	vars := objectVars(f.Object)
	for k, v := range snapshotVars(ix, f, mergedVars(vars, f.Vars)) {
		if _, ok := vars[k]; !ok {
			vars[k] = v
		}
	}
	for k, v := range f.Vars {
		vars[k] = v
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
	p := &personaliser{ix: ix, f: f, vars: vars, words: words, notFleet: notFleetManaged(ix, f)}
	if ix != nil {
		a := newAimer(ix, f)
		p.aim = &a
	}
	return p
}

// step fills and aims every command of one rung; a command that does not apply is left out
// and a note says why.
func (p *personaliser) step(st finding.Step) finding.Step {
	cmds := make([]string, 0, len(st.Commands))
	st.Notes = append([]string(nil), st.Notes...)
	onManagement := slices.ContainsFunc(st.Commands, func(c string) bool { return strings.Contains(c, "fleet-crd") })
	for _, c := range st.Commands {
		c, notes, keep := p.command(c, onManagement)
		for _, n := range notes {
			st.Notes = appendNew(st.Notes, n)
		}
		if keep {
			cmds = append(cmds, c)
		}
	}
	if len(st.Commands) > 0 {
		st.Commands = cmds
	}
	if len(st.Notes) == 0 {
		st.Notes = nil
	}
	return st
}

// command is one command filled and aimed, the notes it needs, and whether it is kept: a
// command whose value fails its rule is kept withheld, one that does not apply is dropped.
func (p *personaliser) command(c string, onManagement bool) (string, []string, bool) {
	if note, ok := p.leftOutBefore(c); ok {
		return "", []string{note}, false
	}
	c, err := fillCommand(c, p.vars, p.words)
	if err != nil {
		return shellcmd.Withheld(err), nil, true
	}
	if why, ok := noRollbackTarget(p.ix, p.f, c); ok {
		return "", []string{"The rollback command is left out: " + why + "."}, false
	}
	if d, ok := missingDeployment(p.ix, p.f, c); ok {
		return "", []string{"The restart command is left out: " + d + "."}, false
	}
	var notes []string
	if p.aim != nil {
		var note string
		if c, note, err = p.aim.aim(c, onManagement); err != nil {
			return shellcmd.Withheld(err), nil, true
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	for _, ph := range placeholders(c) {
		if ph != "<management-context>" && ph != snapshot.ContextPlaceholder {
			notes = append(notes, ph+": "+placeholderWords(ph))
		}
	}
	return c, notes, true
}

// leftOutBefore says, before filling, that a command does not apply to the finding: a Fleet
// command for a release Fleet does not deploy, a GitRepo patch for a bundle made without
// one, a redeploy of an agent that registered itself.
func (p *personaliser) leftOutBefore(c string) (string, bool) {
	if p.notFleet != "" && fleetCommand().MatchString(c) {
		return "The Fleet commands are left out: " + p.notFleet + ".", true
	}
	if b := p.vars[noGitRepo]; b != "" && strings.Contains(c, "gitrepos.fleet.cattle.io <gitrepo>") {
		return "The GitRepo command is left out: bundle " + b + " was not created from a GitRepo.", true
	}
	if fc := p.vars[selfRegistered]; fc != "" && strings.Contains(c, `"redeployAgentGeneration"`) {
		return "The redeployAgentGeneration command is left out: Fleet Cluster " + fc +
			" was registered by its agent (no spec.kubeConfigSecret), and the Fleet controller redeploys only agents it deployed itself.", true
	}
	if w := p.vars[notFleetAgent]; w != "" && agentSettingPatch().MatchString(c) {
		return "The Fleet Cluster patch is left out: it changes only the Fleet agent, and " + w +
			" is not the agent; change it where it is defined (its chart values or manifest), since whatever deploys it overwrites a change made to the live object.", true
	}
	return "", false
}

// agentSettingPatch matches a patch of a Fleet Cluster's agent deployment settings.
var agentSettingPatch = lazyre.New(`patch clusters\.fleet\.cattle\.io .*"agent(Resources|Tolerations|Affinity)"`)

func mergedVars(a, b map[string]string) map[string]string {
	m := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// placeholderPattern is how the catalogue writes a value to fill in: <name>, <n+1>,
// <status.latestHash>. Shell redirections (< file, <<EOF) do not match.
var placeholderPattern = lazyre.New(`<[A-Za-z][A-Za-z0-9+.\-]*>`)

// placeholders lists the placeholders left in a command, in order, once each.
func placeholders(cmd string) []string {
	var out []string
	for _, p := range placeholderPattern().FindAllString(cmd, -1) {
		out = appendNew(out, p)
	}
	return out
}

// placeholderMeaning says what a placeholder stands for, for the ones the input may not
// hold; others get a generic sentence.
var placeholderMeaning = map[string]string{
	"n+1":                    "the object's current generation counter plus one (the input does not hold the object)",
	"gitrepo":                "the GitRepo that created the bundle (the input does not hold the bundle)",
	"fleet-namespace":        "the Fleet workspace namespace of the cluster (no Fleet Cluster in the input matches it)",
	"cluster":                "the Fleet Cluster name of the cluster (no Fleet Cluster in the input matches it)",
	"container":              "the container's name (the pod has several)",
	"deployment":             "the Deployment that owns the pod (the input does not link the pod to one)",
	"fleet-version":          "the Fleet version to install, the one the Fleet controller runs",
	"fleet-crd-chart":        "the fleet-crd chart reference in your Helm repository (e.g. rancher-charts/fleet-crd)",
	"verified-image":         "an image you have checked exists for every node's platform",
	"verified-kubectl-image": "a kubectl image you have checked exists and matches the cluster's version",
	"multi-arch-image":       "an image published for every node's architecture",
	"mirrored-image":         "the image as mirrored in a registry the nodes can reach",
	"existing-image":         "an image reference that exists in its registry",
	"docker-config-file":     "a Docker config file holding the registry's credentials (docker login --password-stdin writes one)",
	"secret":                 "the name to give the pull secret",
	"limit":                  "the memory limit to set",
	"value":                  "the new quota value",
	"seconds":                "the new deadline in seconds",
	"key":                    "the taint key to tolerate",
	"cpu-request":            "a CPU request that fits a node's unrequested CPU (kubectl describe nodes: Allocated resources)",
	"memory-request":         "a memory request that fits a node's unrequested memory (kubectl describe nodes: Allocated resources)",
	"revision":               "the revision to roll back to, one Helm still keeps (see helm history)",
	"webhook":                "the webhook configuration named in the denial",
	"image":                  "the image to pin",
	"digest":                 "the digest the image tag points to now (check it with the registry)",
}

func placeholderWords(p string) string {
	if m, ok := placeholderMeaning[strings.Trim(p, "<>")]; ok {
		return m
	}
	return "not in the input; fill it in"
}

// fillCommand fills a command's placeholders from vars: scoped values ("name@word") first,
// in the commands that contain their word, then the others. Each value is checked against
// the kind of its placeholder and quoted where it stands (internal/shellcmd); the first that
// fails is the error, and the command is withheld.
func fillCommand(c string, vars map[string]string, words []string) (string, error) {
	var err error
	for _, word := range words {
		if strings.Contains(c, word) {
			if c, err = fill(c, func(name string) string { return vars[name+"@"+word] }); err != nil {
				return "", err
			}
		}
	}
	return fill(c, func(name string) string {
		if strings.Contains(name, "@") {
			return ""
		}
		return vars[name]
	})
}

// fill replaces every <name> in s for which value returns a non-empty string, in one pass:
// replaced text is not read again, and an unknown <...> is left as it is.
func fill(s string, value func(name string) string) (string, error) {
	return shellcmd.Fill(s, func(name string) (shellcmd.Arg, bool) {
		v := value(name)
		if v == "" {
			return shellcmd.Arg{}, false
		}
		return shellcmd.Value(placeholderKind(name), name, v), true
	})
}

// objectVars names the placeholders an object fills by its kind.
func objectVars(o finding.ObjectRef) map[string]string {
	v := map[string]string{}
	ns := o.Namespace
	// A BundleDeployment's namespace is the cluster's namespace on the management cluster;
	// <namespace> in its commands is where its resources live downstream.
	if ns != "" && o.Kind != "BundleDeployment" {
		v["namespace"], v["ns"] = ns, ns
	}
	switch o.Kind {
	case "Pod":
		v["pod"] = o.Name
	case "Deployment":
		v["deployment"] = o.Name
		v["workload-kind"], v["workload"] = "deployment", o.Name
	case "DaemonSet", "StatefulSet":
		v["workload-kind"], v["workload"] = strings.ToLower(o.Kind), o.Name
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

var restartCommand = lazyre.New(`-n (\S+) rollout restart deployment/([a-z0-9][a-z0-9.\-]*)`)

// missingDeployment says, for a `rollout restart` of a Deployment on the finding's own cluster,
// that the cluster has no such Deployment: its Deployments were read (it has some, as every
// real cluster does in the namespaces unstick reads), and none has that namespace and name —
// an agent whose Deployment was deleted has nothing to restart.
func missingDeployment(ix *snapIndex, f *finding.Finding, cmd string) (string, bool) {
	m := restartCommand().FindStringSubmatch(cmd)
	if ix == nil || m == nil || managementCommand().MatchString(cmd) {
		return "", false
	}
	c := ix.snap.Cluster(subject(f))
	if c == nil || len(c.Deployments) == 0 {
		return "", false
	}
	for _, d := range c.Deployments {
		if d.Namespace == m[1] && d.Name == m[2] {
			return "", false
		}
	}
	return "cluster " + c.Name + " has no Deployment " + m[1] + "/" + m[2], true
}
