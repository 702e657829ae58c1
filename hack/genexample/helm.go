package main

import (
	"encoding/base64"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
)

type relSpec struct {
	name, ns      string
	version       int
	status        release.Status
	firstDeployed string
	lastDeployed  string
	description   string
	chart         *chart.Metadata
	values        map[string]any
	config        map[string]any
	manifest      string
	created       string // when this revision's Secret was created
	modifiedAt    string // "" = never updated after creation (label createdAt instead)
}

// encodeRelease is what Helm's storage driver stores (pkg/storage/driver/util.go):
// base64(gzip(json(release))).
func encodeRelease(r *release.Release) string {
	return base64.StdEncoding.EncodeToString(gz(toJSON(r)))
}

// helmReleaseSecret builds the sh.helm.release.v1.<name>.v<rev> Secret exactly as
// Helm v3's Secrets driver writes it (pkg/storage/driver/secrets.go).
func (o *out) helmReleaseSecret(r relSpec) *corev1.Secret {
	rel := &release.Release{
		Name: r.name,
		Info: &release.Info{
			FirstDeployed: helmtime.Time{Time: mustTime(r.firstDeployed)},
			LastDeployed:  helmtime.Time{Time: mustTime(r.lastDeployed)},
			Description:   r.description,
			Status:        r.status,
		},
		Chart: &chart.Chart{
			Metadata:  r.chart,
			Templates: []*chart.File{},
			Values:    r.values,
			Files:     []*chart.File{},
		},
		Config:    r.config,
		Manifest:  r.manifest,
		Version:   r.version,
		Namespace: r.ns,
	}
	if rel.Chart.Values == nil {
		rel.Chart.Values = map[string]any{}
	}
	labels := map[string]string{
		"name":    r.name,
		"owner":   "helm",
		"status":  r.status.String(),
		"version": itoa(r.version),
	}
	if r.modifiedAt != "" {
		labels["modifiedAt"] = unixStr(r.modifiedAt)
	} else {
		labels["createdAt"] = unixStr(r.created)
	}
	name := "sh.helm.release.v1." + r.name + ".v" + itoa(r.version)
	return &corev1.Secret{
		TypeMeta:   tm("v1", "Secret"),
		ObjectMeta: o.meta("Secret", name, r.ns, r.created, labels, nil),
		Type:       "helm.sh/release.v1",
		// corev1.Secret.Data is []byte, marshalled as base64 - so the YAML shows the
		// base64 of Helm's base64 string, exactly like `kubectl get secret -o yaml`.
		Data: map[string][]byte{"release": []byte(encodeRelease(rel))},
	}
}

func itoa(i int) string {
	const d = "0123456789"
	if i == 0 {
		return "0"
	}
	s := ""
	for i > 0 {
		s = string(d[i%10]) + s
		i /= 10
	}
	return s
}

// fleetBundleChart is the Chart.yaml Fleet synthesises for a raw-YAML bundle
// (internal/helmdeployer/render/helm.go addChartYAML) plus the annotations
// helmdeployer.Deploy adds (internal/helmdeployer/install.go).
func fleetBundleChart(bundleID, manifestID, agentNS string) *chart.Metadata {
	return &chart.Metadata{
		Name:       bundleID,
		Version:    "v0.0.0+" + manifestID,
		APIVersion: "v2",
		Annotations: map[string]string{
			"fleet.cattle.io/agent-namespace": agentNS,
			"fleet.cattle.io/bundle-id":       bundleID,
			"fleet.cattle.io/keep-resources":  "false",
			"fleet.cattle.io/service-account": "",
		},
	}
}
