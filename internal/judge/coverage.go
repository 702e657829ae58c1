package judge

import (
	"fmt"

	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// coverageWarnings names what an input that unstick did not collect leaves unjudged. A
// bundle written by `unstick collect` or a live read lists every kind the checks use, so an
// absent object there is an absent object. A hand-made dump (kubectl get, kubectl
// cluster-info dump) may simply not hold a kind: without Secrets no Helm release was read,
// and "nothing stuck" would then say nothing about the releases Fleet deploys with Helm.
func coverageWarnings(s *snapshot.Snapshot) []string {
	if s.ClockSource != snapshot.ClockNewest {
		return nil // live, or recorded by collect: what was listed is known
	}
	var out []string
	for _, c := range s.Clusters {
		if len(c.Secrets) == 0 && len(c.HelmReleases) == 0 && report.ObjectCount(c) > 0 {
			out = append(out, fmt.Sprintf("cluster %s: the input holds no Secrets, so no Helm release was judged (helm/ checks, and the Fleet agent's own release); collect the cluster with 'unstick collect' to judge them", c.Name))
		}
	}
	return out
}
