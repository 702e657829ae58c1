package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	fleet "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	rancherURL       = "https://rancher.example.com"
	controllerVer    = "v0.16.0"
	oldAgentVer      = "v0.15.3"
	fleetChartNew    = "110.0.0+up0.16.0"
	fleetChartOld    = "109.0.3+up0.15.3"
	agentSetID       = "fleet-agent-bootstrap"
	manageAgentSetID = "fleet-manage-agent"
)

// cond is the JSON shape of wrangler's genericcondition.GenericCondition; conditions
// are set through JSON so that this program needs no direct wrangler import.
type cond struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	LastUpdateTime     string `json:"lastUpdateTime,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
}

func setConds(dst any, cs ...cond) {
	if err := json.Unmarshal(toJSON(cs), dst); err != nil {
		panic(err)
	}
}

// ---------------------------------------------------------------------------
// agent manifest (what manageagent puts into the fleet-agent-<cluster> Bundle)

func stripForExport(obj any) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(toJSON(obj), &m); err != nil {
		panic(err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	if spec, ok := m["spec"].(map[string]any); ok {
		if tpl, ok := spec["template"].(map[string]any); ok {
			if md, ok := tpl["metadata"].(map[string]any); ok {
				delete(md, "creationTimestamp")
			}
		}
	}
	return m
}

// agentObjects mirrors agent.Manifest() in rancher/fleet
// internal/cmd/controller/agentmanagement/agent/manifest.go.
func agentObjects(a agentOpts) []any {
	role := safeConcatName(a.ns, "fleet-agent", "role")
	tpl := agentPodTemplate(a)
	// The bundle carries the template as Fleet builds it, before API defaulting.
	tpl.Spec.DeprecatedServiceAccount = ""
	tpl.Spec.RestartPolicy, tpl.Spec.DNSPolicy, tpl.Spec.SchedulerName = "", "", ""
	tpl.Spec.TerminationGracePeriodSeconds = nil
	tpl.Spec.Containers[0].TerminationMessagePath = ""
	tpl.Spec.Containers[0].TerminationMessagePolicy = ""
	tpl.Spec.Containers[0].Env[2].ValueFrom.FieldRef.APIVersion = ""
	dep := &appsv1.Deployment{
		TypeMeta:   tm("apps/v1", "Deployment"),
		ObjectMeta: metav1.ObjectMeta{Name: "fleet-agent", Namespace: a.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "fleet-agent"}},
			Template: tpl,
		},
	}
	if a.hostNetwork {
		dep.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	return []any{
		&rbacv1.ClusterRole{
			TypeMeta:   tm("rbac.authorization.k8s.io/v1", "ClusterRole"),
			ObjectMeta: metav1.ObjectMeta{Name: role},
			Rules: []rbacv1.PolicyRule{
				{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
				{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
			ObjectMeta: metav1.ObjectMeta{Name: safeConcatName(a.ns, "fleet-agent", "role", "binding")},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "fleet-agent", Namespace: a.ns}},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		},
		&corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: metav1.ObjectMeta{Name: "fleet-agent", Namespace: a.ns}},
		&corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: a.ns}, AutomountServiceAccountToken: ptr(false)},
		dep,
		&networkingv1.NetworkPolicy{
			TypeMeta:   tm("networking.k8s.io/v1", "NetworkPolicy"),
			ObjectMeta: metav1.ObjectMeta{Name: "default-allow-all", Namespace: a.ns},
			Spec: networkingv1.NetworkPolicySpec{
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{}},
				Egress:      []networkingv1.NetworkPolicyEgressRule{{}},
			},
		},
	}
}

// exportYAML renders objects like wrangler's yaml.Export (multi-document, no status).
func exportYAML(objs []any) string {
	var parts []string
	for _, o := range objs {
		b, err := yaml.Marshal(stripForExport(o))
		if err != nil {
			panic(err)
		}
		parts = append(parts, string(b))
	}
	return "---\n" + strings.Join(parts, "---\n")
}

// releaseManifest renders objects as Fleet's post-renderer hands them to Helm:
// with the objectset labels/annotations of the agent's setID.
func releaseManifest(objs []any, setID string) string {
	var parts []string
	for _, o := range objs {
		m := stripForExport(o)
		md := m["metadata"].(map[string]any)
		l, _ := md["labels"].(map[string]any)
		if l == nil {
			l = map[string]any{}
		}
		l["objectset.rio.cattle.io/hash"] = sha1hex(setID)
		md["labels"] = l
		a, _ := md["annotations"].(map[string]any)
		if a == nil {
			a = map[string]any{}
		}
		a["objectset.rio.cattle.io/id"] = setID
		md["annotations"] = a
		b, err := yaml.Marshal(m)
		if err != nil {
			panic(err)
		}
		parts = append(parts, string(b))
	}
	return "---\n" + strings.Join(parts, "---\n")
}

// manifestID mirrors manifest.ID(): ("s-" + sha256 of the JSON resources)[:63].
func manifestID(resources []fleet.BundleResource) (string, []byte) {
	raw := toJSON(map[string]any{"resources": resources})
	return ("s-" + sha256hex(string(raw)))[:63], raw
}

// optionsHash mirrors options.DeploymentID(): sha256 of the JSON-encoded options.
func optionsHash(opts fleet.BundleDeploymentOptions) string {
	o := *opts.DeepCopy()
	o.Diff = nil
	o.CorrectDrift = nil
	return sha256hex(string(toJSON(o)) + "\n")
}

// ---------------------------------------------------------------------------
// Clusters

type fcl struct {
	ns, name, display, mgmt string
	dir                     string // bundle directory name (clusters/<dir>)
	created                 string
	specAgentNS             string // spec.agentNamespace (local only)
	agentNS                 string // where the agent runs
	lastSeen                string
	redeployGen             int64
	hostNetwork             bool
	resources               *corev1.ResourceRequirements
	extraLabels             map[string]string
	importedAt              string
	regPod                  string // pod that created the ClusterRegistration
	regAt                   string

	clusterNS string
	obj       *fleet.Cluster
	bds       []*fleet.BundleDeployment
}

func (c *fcl) clientID() string { return randFrom("clientid:"+c.name, tokenAlphabet, 54) }

// ---------------------------------------------------------------------------
// Bundles and BundleDeployments

type bdSpec struct {
	created     string
	generation  int64
	oldManifest string // applied deployment manifest ID ("" = same as current)
	oldOptsHash string
	deployErr   string // Deployed=False message
	deployedAt  string // last successful deploy
	errSince    string
	ready       bool
	nonReady    []fleet.NonReadyStatus
	readyMsg    string
	readySince  string
	release     string
	resources   []fleet.BundleDeploymentResource
	monitoredAt string
}

type bundleSpec struct {
	name, ns    string
	created     string
	generation  int64
	labels      map[string]string
	annotations map[string]string
	opts        fleet.BundleDeploymentOptions
	resources   []fleet.BundleResource
	targets     []fleet.BundleTarget
	contentID   string
	contentRaw  []byte
}

func newBundleSpec(name, ns, created string, gen int64, opts fleet.BundleDeploymentOptions, res []fleet.BundleResource, targets []fleet.BundleTarget) *bundleSpec {
	id, raw := manifestID(res)
	return &bundleSpec{name: name, ns: ns, created: created, generation: gen, opts: opts, resources: res, targets: targets, contentID: id, contentRaw: raw}
}

// bundleDeployment builds the BundleDeployment Fleet creates for a bundle/cluster
// pair (target.ResetDeployment / BundleDeploymentLabels in internal/cmd/controller/target).
func (o *out) bundleDeployment(b *bundleSpec, c *fcl, s bdSpec) *fleet.BundleDeployment {
	opts := *b.opts.DeepCopy()
	if opts.Helm == nil {
		opts.Helm = &fleet.HelmOptions{}
	}
	if opts.Helm.Values == nil {
		opts.Helm.Values = &fleet.GenericMap{Data: map[string]any{}}
	}
	depID := b.contentID + ":" + optionsHash(opts)
	applied := depID
	if s.oldManifest != "" {
		applied = s.oldManifest + ":" + s.oldOptsHash
	}
	// BundleDeploymentLabels: the bundle's labels without "cattle.io" keys
	// (wrangler CleanAnnotationsForExport), plus its fleet.cattle.io/ labels
	labels := map[string]string{}
	for k, v := range b.labels {
		if !strings.Contains(k, "cattle.io") || strings.HasPrefix(k, "fleet.cattle.io/") {
			labels[k] = v
		}
	}
	labels[fleet.BundleLabel] = b.name
	labels[fleet.BundleNamespaceLabel] = b.ns
	labels[fleet.ManagedLabel] = "true"
	labels[fleet.ClusterNamespaceLabel] = c.ns
	labels[fleet.ClusterLabel] = c.name
	labels[fleet.ContentNameLabel] = b.contentID
	m := o.meta("BundleDeployment", b.name, c.clusterNS, s.created, labels, nil)
	m.Generation = s.generation
	m.Finalizers = []string{"fleet.cattle.io/bundle-deployment-finalizer"}
	bd := &fleet.BundleDeployment{
		TypeMeta:   tm("fleet.cattle.io/v1alpha1", "BundleDeployment"),
		ObjectMeta: m,
		Spec: fleet.BundleDeploymentSpec{
			StagedOptions:      opts,
			StagedDeploymentID: depID,
			Options:            opts,
			DeploymentID:       depID,
		},
		Status: fleet.BundleDeploymentStatus{
			AppliedDeploymentID: applied,
			Release:             s.release,
			Ready:               s.ready,
			NonModified:         true,
			NonReadyStatus:      s.nonReady,
			SyncGeneration:      ptr(int64(0)),
			Resources:           s.resources,
			ResourceCounts: fleet.ResourceCounts{
				Ready:        len(s.resources) - len(s.nonReady),
				DesiredReady: len(s.resources),
				NotReady:     len(s.nonReady),
			},
		},
	}
	deployed := cond{Type: "Deployed", Status: "True", LastUpdateTime: s.deployedAt}
	if s.deployErr != "" {
		deployed = cond{Type: "Deployed", Status: "False", LastUpdateTime: s.errSince, Reason: "Error", Message: s.deployErr}
	}
	ready := cond{Type: "Ready", Status: "True", LastUpdateTime: s.readySince}
	if !s.ready {
		ready = cond{Type: "Ready", Status: "False", LastUpdateTime: s.readySince, Reason: "Error", Message: s.readyMsg}
	}
	setConds(&bd.Status.Conditions,
		cond{Type: "Installed", Status: "True", LastUpdateTime: s.deployedAt},
		deployed,
		cond{Type: "Monitored", Status: "True", LastUpdateTime: s.monitoredAt},
		ready,
	)
	display := func(cs cond) string {
		if cs.Reason == "Error" {
			return "Error: " + cs.Message
		}
		return cs.Status
	}
	bd.Status.Display = fleet.BundleDeploymentDisplay{
		Deployed:  display(deployed),
		Monitored: "True",
		State:     string(deploymentState(bd)),
	}
	c.bds = append(c.bds, bd)
	o.add("bundledeployments", bd)
	return bd
}

// deploymentState mirrors summary.GetDeploymentState (internal/cmd/controller/summary).
func deploymentState(bd *fleet.BundleDeployment) fleet.BundleState {
	deployedFalse := false
	for _, c := range bd.Status.Conditions {
		if c.Type == "Deployed" && string(c.Status) == "False" {
			deployedFalse = true
		}
	}
	switch {
	case bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID:
		if deployedFalse {
			return fleet.ErrApplied
		}
		return fleet.WaitApplied
	case !bd.Status.Ready:
		return fleet.NotReady
	case bd.Spec.DeploymentID != bd.Spec.StagedDeploymentID:
		return fleet.OutOfSync
	case !bd.Status.NonModified:
		return fleet.Modified
	default:
		return fleet.Ready
	}
}

func messageFromDeployment(bd *fleet.BundleDeployment) string {
	for _, t := range []string{"Deployed", "Installed", "Monitored"} {
		for _, c := range bd.Status.Conditions {
			if c.Type == t && c.Message != "" {
				return c.Message
			}
		}
	}
	return ""
}

func incrementState(s *fleet.BundleSummary, name string, state fleet.BundleState, msg string, bd *fleet.BundleDeployment) {
	switch state {
	case fleet.Modified:
		s.Modified++
	case fleet.Pending:
		s.Pending++
	case fleet.WaitApplied:
		s.WaitApplied++
	case fleet.ErrApplied:
		s.ErrApplied++
	case fleet.NotReady:
		s.NotReady++
	case fleet.OutOfSync:
		s.OutOfSync++
	case fleet.Ready:
		s.Ready++
	}
	if name != "" && state != fleet.Ready && len(s.NonReadyResources) < 10 {
		s.NonReadyResources = append(s.NonReadyResources, fleet.NonReadyResource{
			Name: name, State: state, Message: msg,
			ModifiedStatus: bd.Status.ModifiedStatus, NonReadyStatus: bd.Status.NonReadyStatus,
		})
	}
}

// readyMessage mirrors summary.ReadyMessage (internal/cmd/controller/summary).
func readyMessage(s fleet.BundleSummary, kind string) string {
	var msgs []string
	for _, st := range []struct {
		state fleet.BundleState
		count int
	}{{fleet.OutOfSync, s.OutOfSync}, {fleet.NotReady, s.NotReady}, {fleet.WaitApplied, s.WaitApplied}, {fleet.ErrApplied, s.ErrApplied}, {fleet.Pending, s.Pending}, {fleet.Modified, s.Modified}} {
		if st.count <= 0 {
			continue
		}
		for _, v := range s.NonReadyResources {
			if v.State != st.state {
				continue
			}
			if v.Message == "" {
				msgs = append(msgs, fmt.Sprintf("%s(%d) [%s %s]", st.state, st.count, kind, v.Name))
			} else {
				msgs = append(msgs, fmt.Sprintf("%s(%d) [%s %s: %s]", st.state, st.count, kind, v.Name, v.Message))
			}
			for i, m := range v.ModifiedStatus {
				if i > 3 {
					break
				}
				msgs = append(msgs, m.String())
			}
			for i, m := range v.NonReadyStatus {
				if i > 3 {
					break
				}
				msgs = append(msgs, m.String())
			}
			break
		}
	}
	sort.Strings(msgs)
	return strings.Join(msgs, "; ")
}

func worstState(s fleet.BundleSummary) fleet.BundleState {
	var state fleet.BundleState
	for _, nr := range s.NonReadyResources {
		if fleet.StateRank[nr.State] > fleet.StateRank[state] {
			state = nr.State
		}
	}
	return state
}

// bundle builds the Bundle object with a status computed from its deployments.
func (o *out) bundle(b *bundleSpec, bds []*fleet.BundleDeployment, clusters map[string]*fcl, statusAt string) *fleet.Bundle {
	m := o.meta("Bundle", b.name, b.ns, b.created, b.labels, b.annotations)
	m.Generation = b.generation
	m.Finalizers = []string{"fleet.cattle.io/bundle-finalizer"}
	bun := &fleet.Bundle{
		TypeMeta:   tm("fleet.cattle.io/v1alpha1", "Bundle"),
		ObjectMeta: m,
		Spec: fleet.BundleSpec{
			BundleDeploymentOptions: b.opts,
			Resources:               b.resources,
			Targets:                 b.targets,
		},
	}
	var s fleet.BundleSummary
	unavailable := 0
	var keys []fleet.ResourceKey
	for _, bd := range bds {
		cl := clusters[bd.Labels[fleet.ClusterLabel]]
		st := deploymentState(bd)
		incrementState(&s, cl.ns+"/"+cl.name, st, messageFromDeployment(bd), bd)
		s.DesiredReady++
		if st != fleet.Ready {
			unavailable++
		}
	}
	for _, r := range bds[0].Status.Resources {
		keys = append(keys, fleet.ResourceKey{Kind: r.Kind, APIVersion: r.APIVersion, Namespace: r.Namespace, Name: r.Name})
	}
	n := len(bds)
	bun.Status = fleet.BundleStatus{
		Summary:                  s,
		Unavailable:              unavailable,
		UnavailablePartitions:    0,
		MaxUnavailable:           n,
		MaxUnavailablePartitions: 0,
		PartitionStatus: []fleet.PartitionStatus{{
			Name: "All", Count: n, MaxUnavailable: n, Unavailable: unavailable, Summary: s,
		}},
		Display: fleet.BundleDisplay{
			ReadyClusters: fmt.Sprintf("%d/%d", s.Ready, s.DesiredReady),
			State:         string(worstState(s)),
		},
		ResourceKey:        keys,
		ObservedGeneration: b.generation,
		ResourcesSHA256Sum: sha256hex(string(b.contentRaw)),
	}
	if msg := readyMessage(s, "Cluster"); msg != "" {
		setConds(&bun.Status.Conditions, cond{Type: "Ready", Status: "False", LastUpdateTime: statusAt, Message: msg})
	} else {
		setConds(&bun.Status.Conditions, cond{Type: "Ready", Status: "True", LastUpdateTime: statusAt})
	}
	o.add("bundles", bun)
	return bun
}

func (o *out) content(b *bundleSpec, refs int, created string) *fleet.Content {
	m := o.meta("Content", b.contentID, "", created, nil, nil)
	c := &fleet.Content{
		TypeMeta:   tm("fleet.cattle.io/v1alpha1", "Content"),
		ObjectMeta: m,
		Content:    gz(b.contentRaw),
		Status:     fleet.ContentStatus{ReferenceCount: refs},
	}
	c.SHA256Sum = sha256hex(string(b.contentRaw))
	o.add("contents", c)
	return c
}

// ---------------------------------------------------------------------------
// Fleet Cluster objects

func (o *out) fleetCluster(c *fcl, statusAt, processedAt string) *fleet.Cluster {
	labels := map[string]string{
		"management.cattle.io/cluster-name":         c.mgmt,
		"management.cattle.io/cluster-display-name": c.display,
		"objectset.rio.cattle.io/hash":              sha1hex("fleet-cluster/" + c.ns + "/" + c.name),
	}
	for k, v := range c.extraLabels {
		labels[k] = v
	}
	ann := map[string]string{
		"objectset.rio.cattle.io/id":              "fleet-cluster",
		"objectset.rio.cattle.io/owner-gvk":       "provisioning.cattle.io/v1, Kind=Cluster",
		"objectset.rio.cattle.io/owner-name":      c.name,
		"objectset.rio.cattle.io/owner-namespace": c.ns,
	}
	m := o.meta("Cluster", c.name, c.ns, c.created, labels, ann)
	m.Generation = 3 + c.redeployGen
	m.Finalizers = []string{"fleet.cattle.io/cluster-finalizer"}
	spec := fleet.ClusterSpec{
		ClientID:                  c.clientID(),
		KubeConfigSecret:          c.name + "-kubeconfig",
		KubeConfigSecretNamespace: c.ns,
		RedeployAgentGeneration:   c.redeployGen,
		AgentNamespace:            c.specAgentNS,
		AgentResources:            c.resources,
	}
	if c.hostNetwork {
		spec.HostNetwork = ptr(true)
	}
	var s fleet.BundleSummary
	sorted := append([]*fleet.BundleDeployment(nil), c.bds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, bd := range sorted {
		incrementState(&s, bd.Name, deploymentState(bd), messageFromDeployment(bd), bd)
		s.DesiredReady++
	}
	st := fleet.ClusterStatus{
		Namespace:                 c.clusterNS,
		Summary:                   s,
		AgentDeployedGeneration:   ptr(c.redeployGen),
		AgentMigrated:             true,
		AgentNamespaceMigrated:    true,
		CattleNamespaceMigrated:   true,
		AgentConfigChanged:        false,
		AgentHostNetwork:          c.hostNetwork,
		APIServerURL:              rancherURL,
		APIServerCAHash:           sha256hex("ca")[:56],
		AgentTLSMode:              "system-store",
		GarbageCollectionInterval: &metav1.Duration{Duration: 15 * 60 * 1e9},
		Display: fleet.ClusterDisplay{
			ReadyBundles: fmt.Sprintf("%d/%d", s.Ready, s.DesiredReady),
			State:        string(worstState(s)),
		},
		Agent: fleet.AgentStatus{LastSeen: mt(c.lastSeen), Namespace: c.agentNS},
	}
	if c.resources != nil {
		st.AgentResourcesHash = sha256hex("resources:" + c.name)[:56]
	}
	readyMsg := readyMessage(s, "Bundle")
	ready := cond{Type: "Ready", Status: "True", LastUpdateTime: statusAt}
	if readyMsg != "" {
		ready = cond{Type: "Ready", Status: "False", LastUpdateTime: statusAt, Message: readyMsg}
	}
	setConds(&st.Conditions,
		cond{Type: "Processed", Status: "True", LastUpdateTime: processedAt},
		cond{Type: "Imported", Status: "True", LastUpdateTime: c.importedAt},
		cond{Type: "Reconciled", Status: "True", LastUpdateTime: c.importedAt},
		ready,
	)
	fc := &fleet.Cluster{TypeMeta: tm("fleet.cattle.io/v1alpha1", "Cluster"), ObjectMeta: m, Spec: spec, Status: st}
	c.obj = fc
	return fc
}

func (o *out) clusterRegistration(c *fcl) *fleet.ClusterRegistration {
	name := "request-" + randFrom("req:"+c.name, k8sAlphabet, 5)
	labels := map[string]string{
		"management.cattle.io/cluster-name":         c.mgmt,
		"management.cattle.io/cluster-display-name": c.display,
		"fleet.cattle.io/created-by-agent-pod":      c.regPod,
	}
	m := o.meta("ClusterRegistration", name, c.ns, c.regAt, nil, nil)
	m.GenerateName = "request-"
	m.Generation = 1
	return &fleet.ClusterRegistration{
		TypeMeta:   tm("fleet.cattle.io/v1alpha1", "ClusterRegistration"),
		ObjectMeta: m,
		Spec: fleet.ClusterRegistrationSpec{
			ClientID:      c.clientID(),
			ClientRandom:  randFrom("random:"+c.name, tokenAlphabet, 54),
			ClusterLabels: labels,
		},
		Status: fleet.ClusterRegistrationStatus{ClusterName: c.name, Granted: true},
	}
}
