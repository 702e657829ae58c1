package check

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/fleetconfig"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// checkin is the interval one agent checks in at, and where that was read.
type checkin struct {
	every time.Duration
	// from says where the interval came from, as a reader can look it up
	// ("agentCheckinInterval 1h from ConfigMap cattle-fleet-system/fleet-controller").
	from string
	// src is the evidence source of the object it was read from; "" for Fleet's default.
	src string
}

// staleAfter is how old the heartbeat may be: the larger of the configured threshold and
// fleetconfig.StaleFactor intervals.
func (c checkin) staleAfter(threshold time.Duration) time.Duration {
	return max(threshold, fleetconfig.StaleFactor*c.every)
}

// checkins finds each agent's check-in interval. Most specific first: the CHECKIN_INTERVAL the
// agent's own Deployment runs with (what the agent really uses), then the one the Fleet
// Cluster's spec.agentEnvVars gives it (appended after the controller's, so it wins), then
// agentCheckinInterval of the management cluster's fleet-controller config, else Fleet's
// default. A value that is absent, or redacted by a collector that did not keep it, is
// skipped; one that is unreadable or absurd is skipped with a warning, since a bundle is
// untrusted.
type checkins struct {
	snap *snapshot.Snapshot
	mu   sync.Mutex
	warn map[string]bool
}

func newCheckins(s *snapshot.Snapshot) *checkins {
	return &checkins{snap: s, warn: map[string]bool{}}
}

func (r *checkins) warnf(format string, args ...any) {
	r.mu.Lock()
	r.warn[fmt.Sprintf(format, args...)] = true
	r.mu.Unlock()
}

// err is the warnings as one error (the check's), nil without any.
func (r *checkins) err() error {
	if len(r.warn) == 0 {
		return nil
	}
	ws := make([]string, 0, len(r.warn))
	for w := range r.warn {
		ws = append(ws, w)
	}
	sort.Strings(ws)
	return fmt.Errorf("%s", strings.Join(ws, "; "))
}

func (r *checkins) of(m *snapshot.Cluster, fc *fleetv1.Cluster) checkin {
	if c, ok := r.fromAgent(m, fc); ok {
		return c
	}
	if c, ok := r.fromClusterSpec(m, fc); ok {
		return c
	}
	if c, ok := r.fromController(m); ok {
		return c
	}
	return checkin{every: fleetconfig.DefaultInterval, from: "Fleet's default; no agentCheckinInterval or CHECKIN_INTERVAL was read"}
}

// judge turns one configured value into a checkin, warning (and skipping it) when it cannot
// be trusted.
func (r *checkins) judge(value, what, where, src string) (checkin, bool) {
	d, isDefault, err := fleetconfig.Parse(value)
	if errors.Is(err, fleetconfig.ErrNotKept) {
		return checkin{}, false
	}
	if err != nil {
		r.warnf("ignored %s of %s: %v", what, where, err)
		return checkin{}, false
	}
	from := fmt.Sprintf("%s %s from %s", what, human(d), where)
	if isDefault {
		from = fmt.Sprintf("%s %s from %s, which means Fleet's default %s", what, value, where, human(d))
	}
	return checkin{every: d, from: from, src: src}, true
}

func (r *checkins) fromAgent(m *snapshot.Cluster, fc *fleetv1.Cluster) (checkin, bool) {
	down := r.snap.ClusterForFleet(fc.Namespace + "/" + fc.Name)
	if down == nil && fc.Namespace == "fleet-local" && fc.Name == "local" {
		down = m // the local agent runs on the management cluster itself
	}
	if down == nil {
		return checkin{}, false
	}
	d, _ := down.Get("Deployment", fleet.AgentNamespace(fc), agentDeployment).(*appsv1.Deployment)
	if d == nil {
		return checkin{}, false
	}
	cs := d.Spec.Template.Spec.Containers
	for _, ctr := range cs {
		if ctr.Name != agentDeployment && len(cs) > 1 {
			continue
		}
		if v, ok := lastEnv(ctr.Env, fleetconfig.EnvName); ok {
			where := fmt.Sprintf("Deployment %s/%s on cluster %s", d.Namespace, d.Name, down.Name)
			return r.judge(v, fleetconfig.EnvName, where, sourceOf(down, deploymentRef(d)))
		}
	}
	return checkin{}, false
}

func (r *checkins) fromClusterSpec(m *snapshot.Cluster, fc *fleetv1.Cluster) (checkin, bool) {
	v, ok := lastEnv(fc.Spec.AgentEnvVars, fleetconfig.EnvName)
	if !ok {
		return checkin{}, false
	}
	where := fmt.Sprintf("spec.agentEnvVars of Fleet Cluster %s/%s", fc.Namespace, fc.Name)
	return r.judge(v, fleetconfig.EnvName, where, sourceOf(m, fleetClusterRef(fc)))
}

func (r *checkins) fromController(m *snapshot.Cluster) (checkin, bool) {
	cm, _ := m.Get("ConfigMap", fleetconfig.Namespace, fleetconfig.ConfigMapName).(*corev1.ConfigMap)
	if cm == nil {
		return checkin{}, false
	}
	v, ok := fleetconfig.ConfigInterval(cm.Data[fleetconfig.Key])
	if !ok {
		return checkin{}, false
	}
	where := fmt.Sprintf("ConfigMap %s/%s", cm.Namespace, cm.Name)
	return r.judge(v, fleetconfig.IntervalKey, where, sourceOf(m, ref("v1", "ConfigMap", cm.Namespace, cm.Name)))
}

// lastEnv is the value of the last entry named name (Kubernetes lets a later duplicate win);
// an entry set from a reference holds no value to read.
func lastEnv(env []corev1.EnvVar, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if env[i].Name == name {
			return env[i].Value, env[i].ValueFrom == nil
		}
	}
	return "", false
}
