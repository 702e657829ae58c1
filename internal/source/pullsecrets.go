package source

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/finding"
)

// SecretRef names an image pull secret a workload uses.
type SecretRef struct {
	Cluster, Namespace, Name string
}

// PullSecrets reads the docker config payloads of image pull secrets (kubernetes.io/
// dockerconfigjson ".dockerconfigjson", kubernetes.io/dockercfg ".dockercfg") through the
// clusters' APIs, for the registry checks to authenticate as the workloads would. The payloads
// go to the caller only: they never enter the snapshot, a bundle or a report. A secret that
// cannot be read is reported and skipped.
func (l *Live) PullSecrets(ctx context.Context, refs []SecretRef) ([][]byte, []finding.ScanError) {
	l.defaults()
	byCluster := map[string][]SecretRef{}
	for _, r := range refs {
		byCluster[r.Cluster] = append(byCluster[r.Cluster], r)
	}
	var payloads [][]byte
	var errs []finding.ScanError
	names := make([]string, 0, len(byCluster))
	for n := range byCluster {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, cluster := range names {
		var t *Target
		for i := range l.Targets {
			if l.Targets[i].Name == cluster {
				t = &l.Targets[i]
			}
		}
		if t == nil {
			continue
		}
		cfg := t.ClientConfig()
		// --request-timeout, when shorter, bounds each request as it does for the lists.
		if cfg.Timeout == 0 || cfg.Timeout > l.Timeout {
			cfg.Timeout = l.Timeout
		}
		kube, err := NewKube(cfg)
		if err != nil {
			errs = append(errs, finding.ScanError{Cluster: cluster, Message: fmt.Sprintf("reading pull secrets: %v", err)})
			continue
		}
		seen := map[string]bool{}
		for _, r := range byCluster[cluster] {
			k := r.Namespace + "/" + r.Name
			if seen[k] {
				continue
			}
			seen[k] = true
			s, err := kube.Core.Secrets(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				errs = append(errs, finding.ScanError{Cluster: cluster, Message: fmt.Sprintf("image pull secret %s does not exist; images are checked without it", k)})
				continue
			case apierrors.IsForbidden(err):
				errs = append(errs, finding.ScanError{Cluster: cluster, Message: fmt.Sprintf("forbidden: cannot get image pull secret %s; images are checked with the docker config credentials only", k)})
				continue
			case err != nil:
				errs = append(errs, finding.ScanError{Cluster: cluster, Message: fmt.Sprintf("reading image pull secret %s: %v", k, err)})
				continue
			}
			switch {
			case len(s.Data[corev1.DockerConfigJsonKey]) > 0:
				payloads = append(payloads, s.Data[corev1.DockerConfigJsonKey])
			case len(s.Data[corev1.DockerConfigKey]) > 0:
				payloads = append(payloads, s.Data[corev1.DockerConfigKey])
			default:
				errs = append(errs, finding.ScanError{Cluster: cluster, Message: fmt.Sprintf("image pull secret %s has type %s and no docker config; ignored", k, s.Type)})
			}
		}
	}
	return payloads, errs
}
