package serve

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// DefaultLogReads is how many container logs serve reads at once unless Options.LogReads
// says otherwise. Evaluations run one at a time and read the clusters one after the other,
// so this bounds the log reads of the whole process.
const DefaultLogReads = 4

// currentLogTTL is how long the current log of a container that keeps running is reused. A
// previous log does not change until the container restarts again, so it is reused for as
// long as the pod, the container and its restart count stay the same.
const currentLogTTL = 2 * time.Minute

// logReadTimeout bounds the log reads of one cluster in one evaluation.
const logReadTimeout = 20 * time.Second

// logKey identifies one container log: a crash loop whose restart count has not moved has
// the same previous log, and is not read again.
type logKey struct {
	pod       types.UID
	container string
	previous  bool
	restarts  int32
}

// logRead is one read of a container log, or why it failed.
type logRead struct {
	lines     []string
	forbidden bool
	failed    bool
	at        time.Time
}

// fresh says whether a read may be reused at now.
func (r logRead) fresh(previous bool, now time.Time) bool {
	if previous && !r.failed && !r.forbidden {
		return true
	}
	return now.Sub(r.at) < currentLogTTL
}

// podLogs reads the container logs the checks read, as the live scan picks them
// (source.LogRequests) and reads them (source.TailLog), and keeps them between evaluations.
type podLogs struct {
	core corev1client.PodsGetter
	logReading

	mu sync.Mutex
	by map[logKey]logRead
}

// logReading says how container logs are read: at most limit at once, the last lines of each.
type logReading struct {
	limit int
	lines int64
}

func newPodLogs(core corev1client.PodsGetter, r logReading) *podLogs {
	if r.limit < 1 {
		r.limit = DefaultLogReads
	}
	if r.lines < 1 {
		r.lines = source.DefaultLogLines
	}
	return &podLogs{core: core, logReading: r, by: map[logKey]logRead{}}
}

// feed adds the logs of pods to b: those read before and still fresh from the cache, the
// others read now, at most limit at once, until stop closes. Logs no longer asked for are
// forgotten.
func (l *podLogs) feed(b *snapshot.Builder, cluster string, pods []*corev1.Pod, stop <-chan struct{}) {
	reqs := source.LogRequests(pods, source.DefaultMaxLogPods)
	reads := l.read(reqs, stop)
	for i, q := range reqs {
		r := reads[i]
		switch {
		case r.forbidden:
			b.Error(finding.ScanError{Cluster: cluster, Message: source.LogForbidden(q)})
		case !r.failed:
			b.AddLog(cluster, q.Pod.Namespace, q.Pod.Name, q.Container, q.Previous, q.File(cluster), r.lines)
		}
		// A kubelet that does not answer, or a previous log that rotated away, leaves the
		// checks with the pod's status and events, as in a scan: not an error.
	}
}

// read returns a read of each request, reading only what the cache does not hold fresh.
func (l *podLogs) read(reqs []source.LogRequest, stop <-chan struct{}) []logRead {
	now := time.Now()
	out := make([]logRead, len(reqs))
	keys := make([]logKey, len(reqs))
	var todo []int
	l.mu.Lock()
	keep := make(map[logKey]logRead, len(reqs))
	for i, q := range reqs {
		keys[i] = logKey{q.Pod.UID, q.Container, q.Previous, q.Restarts}
		if r, ok := l.by[keys[i]]; ok && r.fresh(q.Previous, now) {
			out[i], keep[keys[i]] = r, r
			continue
		}
		todo = append(todo, i)
	}
	l.mu.Unlock()
	l.readNow(reqs, todo, out, stop)
	for _, i := range todo {
		if !out[i].at.IsZero() {
			keep[keys[i]] = out[i]
		}
	}
	l.mu.Lock()
	l.by = keep
	l.mu.Unlock()
	return out
}

// readNow reads reqs[i] for every i of todo into out[i], at most limit at once. A read cut
// short by the timeout or by stop (serve ending, the cluster no longer watched) is left
// unstamped, so the next evaluation reads it again.
func (l *podLogs) readNow(reqs []source.LogRequest, todo []int, out []logRead, stop <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), logReadTimeout)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	sem := make(chan struct{}, l.limit)
	var wg sync.WaitGroup
	for _, i := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = l.readOne(ctx, reqs[i])
		}()
	}
	wg.Wait()
}

func (l *podLogs) readOne(ctx context.Context, q source.LogRequest) logRead {
	lines, err := source.TailLog(ctx, l.core, q, l.lines)
	switch {
	case err == nil:
		return logRead{lines: lines, at: time.Now()}
	case apierrors.IsForbidden(err):
		return logRead{forbidden: true, at: time.Now()}
	case ctx.Err() != nil:
		return logRead{failed: true} // unstamped: not kept
	}
	return logRead{failed: true, at: time.Now()}
}

// size is how many reads the cache holds (tests).
func (l *podLogs) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.by)
}
