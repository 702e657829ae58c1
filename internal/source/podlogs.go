package source

import (
	"context"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Defaults of the live log reads: the tail read of each container log, and how many pods'
// logs are read per cluster.
const (
	DefaultLogLines   = 500
	DefaultMaxLogPods = 40
)

// LogRequest is one container log the checks read: the current or the previous one.
type LogRequest struct {
	Pod       *corev1.Pod
	Container string
	Previous  bool
	// Restarts is the container's restart count when the pod was read: a previous log
	// stays the same until the container restarts again.
	Restarts int32
}

// File names the log in evidence, as the live scan names it.
func (q LogRequest) File(cluster string) string {
	file := "live " + cluster + " logs/" + q.Pod.Namespace + "/" + q.Pod.Name + "/" + q.Container
	if q.Previous {
		return file + ".previous.log"
	}
	return file + ".log"
}

// LogRequests picks the container logs the checks read from pods: every container of the
// agents (Fleet's, Rancher's cluster agent, system-upgrade-controller), and the containers of
// other pods that are not ready or have restarted; the current log of a container that runs
// or has terminated, the previous one of a container that restarted. Pods are taken in
// namespace/name order, at most maxPods of them (a negative maxPods reads none). pods is
// sorted in place.
func LogRequests(pods []*corev1.Pod, maxPods int) []LogRequest {
	sort.Slice(pods, func(i, j int) bool {
		return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name
	})
	var reqs []LogRequest
	n := 0
	for _, p := range pods {
		picked := podLogRequests(p)
		if len(picked) == 0 {
			continue
		}
		if n++; n > maxPods {
			break
		}
		reqs = append(reqs, picked...)
	}
	return reqs
}

// podLogRequests are the logs of one pod that LogRequests reads.
func podLogRequests(p *corev1.Pod) []LogRequest {
	agent := strings.HasPrefix(p.Name, "fleet-agent") || strings.HasPrefix(p.Name, "cattle-cluster-agent") || strings.HasPrefix(p.Name, "system-upgrade-controller")
	var picked []LogRequest
	for _, cs := range p.Status.ContainerStatuses {
		if !agent && cs.Ready && cs.RestartCount == 0 {
			continue
		}
		if cs.State.Running != nil || cs.State.Terminated != nil {
			picked = append(picked, LogRequest{Pod: p, Container: cs.Name, Restarts: cs.RestartCount})
		}
		if cs.RestartCount > 0 {
			picked = append(picked, LogRequest{Pod: p, Container: cs.Name, Previous: true, Restarts: cs.RestartCount})
		}
	}
	return picked
}

// TailLog reads the last lines of one container log through the API server (pods/log),
// redacted and cut as a bundle's logs are. Reads that may pass when tried again are retried.
func TailLog(ctx context.Context, pods corev1client.PodsGetter, q LogRequest, lines int64) ([]string, error) {
	// Lines above the tail, so that a key or a wrapped block the tail starts in is redacted
	// as a whole before the tail is cut (tailLines).
	fetch := lines + logContextLines
	var b []byte
	err := retryRead(ctx, func() error {
		rc, err := pods.Pods(q.Pod.Namespace).GetLogs(q.Pod.Name, &corev1.PodLogOptions{Container: q.Container, Previous: q.Previous, TailLines: &fetch}).Stream(ctx)
		if err != nil {
			return err
		}
		defer rc.Close()
		b, err = io.ReadAll(io.LimitReader(rc, 8<<20))
		return err
	})
	if err != nil {
		return nil, err
	}
	return tailLines(b, Limits{MaxLogLines: int(lines), MaxLineBytes: DefaultLimits.MaxLineBytes}), nil
}

// LogForbidden is the error a forbidden log read is reported with.
func LogForbidden(q LogRequest) string {
	return "forbidden: cannot read logs of " + q.Pod.Namespace + "/" + q.Pod.Name + " (pods/log)"
}
