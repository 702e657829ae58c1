package suc

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// DefaultKubectlImage is the kubectl image SUC v0.20.1 runs drain and cordon with when
// SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE is unset or empty (pkg/upgrade/job/job.go
// defaultKubectlImage = "rancher/kubectl:v1.30.3"; the upstream manifest's
// default-controller-env ConfigMap sets the same value).
const DefaultKubectlImage = "rancher/kubectl:v1.30.3"

// Controller settings read from the environment (job.go, plan.go).
const (
	EnvKubectlImage        = "SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE"
	EnvKubectlImageWindows = "SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE_WINDOWS"
	EnvActiveDeadline      = "SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS"
	// EnvPrefix is the prefix of every controller setting; the snapshot keeps ConfigMap values
	// under it (they are settings, not secrets).
	EnvPrefix = "SYSTEM_UPGRADE_"
)

// DefaultConfigMap is the ConfigMap the upstream manifest loads with envFrom.
const DefaultConfigMap = "default-controller-env"

// Controller is what unstick knows of one system-upgrade-controller Deployment.
type Controller struct {
	Deployment *appsv1.Deployment
	// Settings are the SYSTEM_UPGRADE_* values it runs with (env overrides envFrom, as in
	// Kubernetes), and where each came from.
	Settings map[string]Setting
	// MissingConfigMaps are envFrom ConfigMaps that were not found (optional ones excluded).
	MissingConfigMaps []string
}

// Setting is one controller setting and its source ("env", "configmap ns/name").
type Setting struct {
	Value  string
	Source string
}

// KubectlImage is the image drain and cordon containers run: the setting, else the default.
func (c *Controller) KubectlImage() (image, source string) {
	if c != nil {
		if s, ok := c.Settings[EnvKubectlImage]; ok && s.Value != "" {
			return s.Value, s.Source
		}
	}
	return DefaultKubectlImage, "default (SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE unset)"
}

// IsController reports a system-upgrade-controller Deployment: its pod template carries the
// upgrade.cattle.io/controller label (the manifest's "necessary to avoid drain"), or its
// container image is rancher/system-upgrade-controller.
func IsController(d *appsv1.Deployment) bool {
	if _, ok := d.Spec.Template.Labels[LabelController]; ok {
		return true
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if strings.Contains(c.Image, "system-upgrade-controller") {
			return true
		}
	}
	return false
}

// ReadController resolves a controller Deployment's settings. configMap returns the data of
// a ConfigMap (nil when it was not read).
func ReadController(d *appsv1.Deployment, configMap func(namespace, name string) map[string]string) *Controller {
	c := &Controller{Deployment: d, Settings: map[string]Setting{}}
	var ctr *corev1.Container
	for i := range d.Spec.Template.Spec.Containers {
		x := &d.Spec.Template.Spec.Containers[i]
		if x.Name == "system-upgrade-controller" || strings.Contains(x.Image, "system-upgrade-controller") || ctr == nil {
			ctr = x
		}
	}
	if ctr == nil {
		return c
	}
	for _, ef := range ctr.EnvFrom {
		if ef.ConfigMapRef == nil {
			continue
		}
		data := configMap(d.Namespace, ef.ConfigMapRef.Name)
		if data == nil {
			if ef.ConfigMapRef.Optional == nil || !*ef.ConfigMapRef.Optional {
				c.MissingConfigMaps = append(c.MissingConfigMaps, d.Namespace+"/"+ef.ConfigMapRef.Name)
			}
			continue
		}
		for k, v := range data {
			c.Settings[ef.Prefix+k] = Setting{Value: v, Source: "configmap " + d.Namespace + "/" + ef.ConfigMapRef.Name}
		}
	}
	for _, e := range ctr.Env {
		if e.ValueFrom == nil {
			c.Settings[e.Name] = Setting{Value: e.Value, Source: "env of deployment " + d.Namespace + "/" + d.Name}
		}
	}
	return c
}
