// Command genexample writes the example offline bundle examples/fleet-upgrade-stuck:
// a Rancher local (Fleet management) cluster plus six downstream clusters caught
// in the middle of a Fleet v0.15.3 -> v0.16.0 agent upgrade, three of them stuck, and
// one (prod-ap-1, gate.go) about to move to a Kubernetes version that would break it.
//
//	go run ./hack/genexample -out examples/fleet-upgrade-stuck
//
// The output is deterministic: fixed timestamps, UIDs and hashes derived from
// names, no randomness. Objects are built from the real Go types
// (k8s.io/api, github.com/rancher/fleet/pkg/apis, helm.sh/helm/v3/pkg/release)
// and marshalled with sigs.k8s.io/yaml, so field names are the real ones.
// See examples/fleet-upgrade-stuck/README.md for the scenario.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	fleet "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func main() {
	outDir := flag.String("out", "examples/fleet-upgrade-stuck", "output directory")
	flag.Parse()
	if err := run(*outDir); err != nil {
		fmt.Fprintln(os.Stderr, "genexample:", err)
		os.Exit(1)
	}
}

// The fleet: Fleet Cluster objects in the management cluster.
func fleetClusters() []*fcl {
	agentRes := &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
	cs := []*fcl{
		{ns: "fleet-local", name: "local", display: "local", mgmt: "local", dir: "local",
			created: "2026-01-12T09:14:07Z", specAgentNS: "cattle-fleet-local-system", agentNS: "cattle-fleet-local-system", resources: agentRes,
			lastSeen: "2026-11-28T09:27:41Z", redeployGen: 1, importedAt: "2026-11-28T07:02:41Z",
			extraLabels: map[string]string{"name": "local", "provider.cattle.io": "rke2"}, regAt: "2026-01-12T09:16:52Z"},
		{ns: "fleet-default", name: "c-m-4x7kq2zt", display: "prod-eu-1", mgmt: "c-m-4x7kq2zt", dir: "prod-eu-1",
			created: "2026-03-14T10:20:55Z", agentNS: "cattle-fleet-system",
			lastSeen: "2026-11-28T09:24:13Z", redeployGen: 2, importedAt: "2026-09-02T16:40:12Z",
			extraLabels: map[string]string{"env": "production", "region": "eu-west"}, regAt: "2026-09-02T16:40:31Z"},
		{ns: "fleet-default", name: "c-m-9p2vdl6r", display: "prod-us-1", mgmt: "c-m-9p2vdl6r", dir: "prod-us-1",
			created: "2026-04-08T13:05:12Z", agentNS: "cattle-fleet-system", hostNetwork: true,
			lastSeen: "2026-11-28T07:20:00Z", redeployGen: 1, importedAt: "2026-04-08T13:07:01Z",
			extraLabels: map[string]string{"env": "production", "region": "us-east"}, regAt: "2026-04-08T13:07:44Z"},
		{ns: "fleet-default", name: "c-m-h5w8zq3n", display: "edge-arm-1", mgmt: "c-m-h5w8zq3n", dir: "edge-arm-1",
			created: "2026-06-19T08:41:30Z", agentNS: "cattle-fleet-system",
			lastSeen: "2026-11-28T09:21:05Z", redeployGen: 1, importedAt: "2026-06-19T08:43:09Z",
			extraLabels: map[string]string{"env": "edge", "arch": "arm64"}, regAt: "2026-06-19T08:43:55Z"},
		{ns: "fleet-default", name: "c-m-t3b6nc8x", display: "staging-1", mgmt: "c-m-t3b6nc8x", dir: "staging-1",
			created: "2026-02-20T15:33:09Z", agentNS: "cattle-fleet-system", resources: agentRes,
			lastSeen: "2026-11-28T09:26:50Z", redeployGen: 1, importedAt: "2026-08-17T10:05:33Z",
			extraLabels: map[string]string{"env": "staging"}, regAt: "2026-08-17T10:05:58Z"},
		{ns: "fleet-default", name: "c-m-r8j2fw5m", display: "dev-1", mgmt: "c-m-r8j2fw5m", dir: "dev-1",
			created: "2026-05-27T11:02:44Z", agentNS: "cattle-fleet-system", resources: agentRes,
			lastSeen: "2026-11-28T09:28:02Z", redeployGen: 1, importedAt: "2026-05-27T11:04:20Z",
			extraLabels: map[string]string{"env": "dev"}, regAt: "2026-05-27T11:05:02Z"},
	}
	cs = append(cs, gateFleetCluster())
	for _, c := range cs {
		c.clusterNS = fleetClusterNamespace(c.ns, c.name)
		c.regPod = "fleet-agent-" + randFrom("regpod-rs:"+c.name, k8sAlphabet, 10) + "-" + randFrom("regpod:"+c.name, k8sAlphabet, 5)
	}
	return cs
}

func (c *fcl) agentOpts(version string) agentOpts {
	return agentOpts{ns: c.agentNS, scope: c.specAgentNS, version: version, resources: c.resources, hostNetwork: c.hostNetwork}
}

func (c *fcl) agentBundleName() string { return safeConcatName("fleet-agent", c.name) }

// agentBundle is the Bundle manageagent builds for a cluster
// (internal/cmd/controller/agentmanagement/controllers/manageagent/manageagent.go).
func agentBundle(c *fcl, version string) *bundleSpec {
	objs := agentObjects(c.agentOpts(version))
	res := []fleet.BundleResource{{Name: "agent.yaml", Content: exportYAML(objs)}}
	opts := fleet.BundleDeploymentOptions{
		DefaultNamespace: c.agentNS,
		Helm:             &fleet.HelmOptions{TakeOwnership: true},
	}
	targets := []fleet.BundleTarget{{
		ClusterName: c.name,
		ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "fleet.cattle.io/non-managed-agent", Operator: metav1.LabelSelectorOpDoesNotExist,
		}}},
	}}
	b := newBundleSpec(c.agentBundleName(), c.ns, rfc(mustTime(c.created).Add(150e9)), 14, opts, res, targets)
	b.labels = map[string]string{"objectset.rio.cattle.io/hash": sha1hex(manageAgentSetID + "/" + c.ns)}
	b.annotations = map[string]string{
		"objectset.rio.cattle.io/id":              manageAgentSetID,
		"objectset.rio.cattle.io/owner-gvk":       "/v1, Kind=Namespace",
		"objectset.rio.cattle.io/owner-name":      c.ns,
		"objectset.rio.cattle.io/owner-namespace": "",
	}
	return b
}

// optsFor returns the options Fleet puts on the BundleDeployment (after
// preprocessHelmValues, which turns a nil values map into {}).
func optsFor(b *bundleSpec) fleet.BundleDeploymentOptions {
	o := *b.opts.DeepCopy()
	if o.Helm == nil {
		o.Helm = &fleet.HelmOptions{}
	}
	if o.Helm.Values == nil {
		o.Helm.Values = &fleet.GenericMap{Data: map[string]any{}}
	}
	return o
}

func appBundles() (*bundleSpec, *bundleSpec) {
	all := []fleet.BundleTarget{{Name: "all", ClusterSelector: &metav1.LabelSelector{}}}
	mon := newBundleSpec("monitoring-stack", "fleet-default", "2026-08-20T12:00:14Z", 6,
		fleet.BundleDeploymentOptions{DefaultNamespace: "monitoring", Helm: &fleet.HelmOptions{
			Values: &fleet.GenericMap{Data: map[string]any{"scrapeInterval": "30s"}},
		}},
		[]fleet.BundleResource{{Name: "node-exporter.yaml", Content: nodeExporterYAML}}, all)
	mon.labels = map[string]string{"team": "platform"}
	ing := newBundleSpec("ingress-config", "fleet-default", "2026-08-20T12:00:16Z", 3,
		fleet.BundleDeploymentOptions{DefaultNamespace: "ingress-config"},
		[]fleet.BundleResource{{Name: "configmap.yaml", Content: ingressYAML}}, all)
	ing.labels = map[string]string{"team": "platform"}
	return mon, ing
}

const nodeExporterYAML = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node-exporter
spec:
  selector:
    matchLabels:
      app: node-exporter
  template:
    metadata:
      labels:
        app: node-exporter
    spec:
      hostNetwork: true
      hostPID: true
      tolerations:
      - operator: Exists
      containers:
      - name: node-exporter
        image: quay.io/prometheus/node-exporter:v1.9.1
        args: ["--path.rootfs=/host"]
        ports:
        - containerPort: 9100
          name: metrics
        volumeMounts:
        - name: root
          mountPath: /host
          readOnly: true
      volumes:
      - name: root
        hostPath:
          path: /
`

const ingressYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: ingress-defaults
data:
  proxy-body-size: 16m
  ssl-protocols: TLSv1.2 TLSv1.3
  use-forwarded-headers: "true"
`

func run(outDir string) error {
	if err := os.RemoveAll(filepath.Join(outDir, "clusters")); err != nil {
		return err
	}
	cs := fleetClusters()
	byName := map[string]*fcl{}
	for _, c := range cs {
		byName[c.name] = c
	}

	w := &world{outDir: outDir, clusters: cs, byName: byName}
	// Downstream clusters first: the management side refers to their UIDs.
	for _, c := range cs[1:] {
		if err := w.downstream(c); err != nil {
			return err
		}
	}
	if err := w.local(); err != nil {
		return err
	}
	if err := w.rancher(); err != nil {
		return err
	}
	return writeBundleInfo(outDir, cs)
}

type world struct {
	outDir   string
	clusters []*fcl
	byName   map[string]*fcl
	// filled by downstream(): the edge fleet-agent Deployment's UID and new RS name
	edgeDeployUID string
	edgeNewRS     string
}

func writeBundleInfo(outDir string, cs []*fcl) error {
	s := "apiVersion: unstick.dev/v1alpha1\nkind: BundleInfo\n"
	s += "collectedAt: \"" + rfc(collectedAt) + "\"\n"
	s += "collector: hack/genexample (synthetic example bundle)\n"
	s += "clusters:\n"
	for _, c := range cs {
		role, server := "downstream", rancherURL+"/k8s/clusters/"+c.mgmt
		if c.name == "local" {
			role, server = "management", rancherURL
		}
		s += "  - name: " + c.dir + "\n"
		s += "    role: " + role + "\n"
		s += "    server: " + server + "\n"
		s += "    fleetCluster: " + c.ns + "/" + c.name + "\n"
	}
	for _, c := range rancherClusters { // rancher.go: clusters without a Fleet agent of their own in the example
		s += "  - name: " + c.dir + "\n    role: downstream\n    server: " + rancherURL + "/k8s/clusters/" + c.id + "\n"
	}
	return os.WriteFile(filepath.Join(outDir, "unstick-bundle.yaml"), []byte(s), 0o644)
}
