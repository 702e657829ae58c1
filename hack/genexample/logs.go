package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Log lines in the formats the Fleet binaries produce: controller-runtime's zap
// logger in development mode (console encoder, RFC3339 time, CapitalLevel,
// stack traces from warn level up) and klog text lines from client-go.

// logw buffers lines with their time and writes them in time order, the way
// they would appear in the container log.
type logw struct{ entries []logEntry }

type logEntry struct {
	t    time.Time
	text string
}

func (l *logw) line(t time.Time, s string) { l.entries = append(l.entries, logEntry{t, s + "\n"}) }

func (l *logw) zap(t time.Time, level, logger, msg string, fields ...string) {
	var sb strings.Builder
	sb.WriteString(rfc(t))
	sb.WriteString("\t" + level)
	if logger != "" {
		sb.WriteString("\t" + logger)
	}
	sb.WriteString("\t" + msg)
	if len(fields) > 0 {
		sb.WriteString("\t{" + strings.Join(fields, ", ") + "}")
	}
	l.line(t, sb.String())
}

// stack appends a development-mode stack trace to the previous line.
func (l *logw) stack(frames ...string) {
	last := &l.entries[len(l.entries)-1]
	for _, f := range frames {
		last.text += f + "\n"
	}
}

// klog writes a klog header line: Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg
func (l *logw) klog(t time.Time, sev byte, file string, msg string) {
	// sub-90µs jitter for realistic timestamps; the sort key stays t
	h := sha256hex(t.Format(time.RFC3339Nano))
	shown := t.Add(time.Duration((int(h[0])*31+int(h[1]))%89) * time.Microsecond)
	l.line(t, fmt.Sprintf("%c%s %s %7d %s] %s", sev, shown.Format("0102"), shown.Format("15:04:05.000000"), 1, file, msg))
}

func (l *logw) logrus(t time.Time, level, msg string) {
	l.line(t, fmt.Sprintf("time=%q level=%s msg=%q", rfc(t), level, msg))
}

func (l *logw) String() string {
	sort.SliceStable(l.entries, func(i, j int) bool { return l.entries[i].t.Before(l.entries[j].t) })
	var sb strings.Builder
	for _, e := range l.entries {
		sb.WriteString(e.text)
	}
	return sb.String()
}

func q(k, v string) string           { return fmt.Sprintf("%q: %q", k, v) }
func qn(k string, v int) string      { return fmt.Sprintf("%q: %d", k, v) }
func qb(k string, v bool) string     { return fmt.Sprintf("%q: %t", k, v) }
func qraw(k string, v string) string { return fmt.Sprintf("%q: %s", k, v) }

func bdFields(name, ns, reconcileID string) []string {
	return []string{
		q("controller", "bundledeployment"),
		q("controllerGroup", "fleet.cattle.io"),
		q("controllerKind", "BundleDeployment"),
		qraw("BundleDeployment", fmt.Sprintf(`{"name":%q,"namespace":%q}`, name, ns)),
		q("namespace", ns),
		q("name", name),
		q("reconcileID", reconcileID),
	}
}

var reconcileStack = []string{
	"sigs.k8s.io/controller-runtime/pkg/internal/controller.(*Controller[...]).reconcileHandler",
	"\t/go/pkg/mod/sigs.k8s.io/controller-runtime@v0.21.0/pkg/internal/controller/controller.go:353",
	"sigs.k8s.io/controller-runtime/pkg/internal/controller.(*Controller[...]).processNextWorkItem",
	"\t/go/pkg/mod/sigs.k8s.io/controller-runtime@v0.21.0/pkg/internal/controller/controller.go:300",
	"sigs.k8s.io/controller-runtime/pkg/internal/controller.(*Controller[...]).Start.func2.1",
	"\t/go/pkg/mod/sigs.k8s.io/controller-runtime@v0.21.0/pkg/internal/controller/controller.go:202",
}

// agentStartup writes the lines a fleet-agent writes from process start to running workers.
func agentStartup(l *logw, t time.Time, ns, pod, clusterName, clusterNS string) time.Time {
	l.klog(t, 'I', "leaderelection.go:257", "attempting to acquire leader lease "+ns+"/fleet-agent...")
	t = t.Add(1200 * time.Millisecond)
	l.klog(t, 'I', "leaderelection.go:271", "successfully acquired lease "+ns+"/fleet-agent")
	l.zap(t, "INFO", "setup", "renewed leader", q("identity", pod))
	t = t.Add(800 * time.Millisecond)
	l.zap(t, "INFO", "setup", "listening for changes on upstream cluster", q("cluster", clusterName), q("namespace", clusterNS))
	l.zap(t, "INFO", "setup", "starting manager")
	l.zap(t, "INFO", "controller-runtime.metrics", "Starting metrics server")
	l.zap(t, "INFO", "", "starting server", q("name", "health probe"), q("addr", "[::]:8081"))
	l.zap(t, "INFO", "controller-runtime.metrics", "Serving metrics server", q("bindAddress", ":8080"), qb("secure", false))
	l.zap(t, "INFO", "", "Starting EventSource", q("controller", "bundledeployment"), q("controllerGroup", "fleet.cattle.io"), q("controllerKind", "BundleDeployment"), q("source", "kind source: *v1alpha1.BundleDeployment"))
	l.zap(t, "INFO", "", "Starting EventSource", q("controller", "drift-reconciler"), q("source", "channel source: 0xc0007a2f00"))
	l.zap(t, "INFO", "", "Starting Controller", q("controller", "bundledeployment"), q("controllerGroup", "fleet.cattle.io"), q("controllerKind", "BundleDeployment"))
	l.zap(t, "INFO", "", "Starting Controller", q("controller", "drift-reconciler"))
	t = t.Add(600 * time.Millisecond)
	l.zap(t, "INFO", "", "Starting workers", q("controller", "drift-reconciler"), qn("worker count", 50))
	l.zap(t, "INFO", "", "Starting workers", q("controller", "bundledeployment"), q("controllerGroup", "fleet.cattle.io"), q("controllerKind", "BundleDeployment"), qn("worker count", 50))
	return t
}

func reconcileID(seed string) string { return string(uid("reconcile:" + seed)) }

// selfUpgradeLines are the lines an agent writes when it upgrades its own release.
func selfUpgradeLines(l *logw, t time.Time, bd, clusterNS, release, depID, applied string) {
	rid := reconcileID(bd + rfc(t))
	f := append(bdFields(bd, clusterNS, rid), q("commit", ""), qb("dryRun", false))
	l.zap(t, "INFO", "bundledeployment.HelmDeployer.install", "Upgrading helm release", f...)
	f = append(bdFields(bd, clusterNS, rid), q("deploymentID", depID), q("appliedDeploymentID", applied), q("release", release), q("DeploymentID", depID))
	l.zap(t.Add(1500*time.Millisecond), "INFO", "bundledeployment.DeployBundle", "Deployed bundle", f...)
}
