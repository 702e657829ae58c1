package main

import (
	"fmt"
	"strings"
	"time"
)

func logrus(t time.Time, level, msg string) string {
	return fmt.Sprintf("time=%q level=%s msg=%q\n", t.UTC().Format("2006-01-02T15:04:05Z"), level, msg)
}

// crashingAgent is a fleet-agent pod in CrashLoopBackOff, its previous container's log given.
func (s *scenario) crashingAgent(cluster string, created time.Time, restarts int, lastStart, lastEnd time.Time, previous string) {
	rs := "fleet-agent-" + hash(cluster + "rs")[:10]
	name := rs + "-" + hash(cluster)[:5]
	last := terminated("Error", 1, lastStart, lastEnd)
	p := pod{ns: "cattle-fleet-system", name: name, ownerKind: "ReplicaSet", owner: rs, node: cluster + "-cp-1", created: created,
		labels:     map[string]string{"app": "fleet-agent", "pod-template-hash": hash(cluster + "rs")[:10]},
		containers: []obj{container("fleet-agent", agentImage, obj{"requests": obj{"cpu": "100m", "memory": "128Mi"}})},
		statuses: []obj{waiting("fleet-agent", agentImage, "CrashLoopBackOff",
			"back-off 5m0s restarting failed container=fleet-agent pod="+name+"_cattle-fleet-system("+uid(name)+")", restarts, last)},
		phase: "Running", conditions: podConds(false, lastEnd)}
	s.add(s.in(cluster, "cattle-fleet-system/pods.yaml"), p.object())
	s.logs[s.in(cluster, "logs/cattle-fleet-system/"+name+"/fleet-agent.previous.log")] = previous
}

func agentScenarios() []*scenario {
	var out []*scenario
	// fleet#687: the agent of a custom cluster cannot register: Rancher's certificate is signed
	// by a corporate CA the agent does not trust.
	{
		const src = "https://github.com/rancher/fleet/issues/687"
		line := `Failed to register agent: looking up secret cattle-fleet-system/fleet-agent-bootstrap: Post "https://rancher.corp.example:8443/apis/fleet.cattle.io/v1alpha1/namespaces/fleet-default/clusterregistrations": x509: certificate signed by unknown authority`
		for _, positive := range []bool{true, false} {
			var s *scenario
			var log strings.Builder
			start := ago(50 * time.Minute)
			log.WriteString(logrus(start, "info", "Starting /v1, Kind=ConfigMap controller"))
			if positive {
				s = newScenario("agent/real-fleet687-private-ca-positive", src, `
A custom cluster registered against a Rancher whose certificate is signed by a corporate CA:
the agent has retried its registration for 50 minutes and every attempt fails with "x509:
certificate signed by unknown authority". A TLS trust problem, not the network and not the
registration objects.`)
				s.expect.RootCauses = []string{"agent/tls"}
				s.expect.Forbid = []string{"cluster/clock-skew", "agent/api-unreachable", "agent/config-invalid"}
				for i := 0; i < 14; i++ {
					log.WriteString(logrus(start.Add(time.Duration(i)*3*time.Minute+10*time.Second), "error", line))
				}
			} else {
				s = newScenario("agent/real-fleet687-private-ca-healthy", src, `
Look-alike after the fix: the corporate CA was added as the docs' "Updating a Private CA
certificate" describe. The agent's log still shows the two failed attempts from before, then
it registered and has worked for 45 minutes.`)
				s.expect.Forbid = []string{"agent/tls", "fleet/registration-broken"}
				s.expect.MaxSeverity = "info"
				log.WriteString(logrus(start.Add(10*time.Second), "error", line))
				log.WriteString(logrus(start.Add(70*time.Second), "error", line))
				log.WriteString(logrus(start.Add(4*time.Minute), "info", "Starting fleet.cattle.io/v1alpha1, Kind=BundleDeployment controller"))
				for i := 0; i < 240; i++ {
					log.WriteString(logrus(start.Add(5*time.Minute+time.Duration(i)*10*time.Second), "info", "Deployed bundle"))
				}
			}
			s.cluster("prod-ca-1", "downstream")
			s.agentPod("prod-ca-1", start, 0, nil, log.String())
			out = append(out, s)
		}
	}
	// k3s#5163 (clock) and k3s#3047 (expired): the same x509 error, "is before" versus "is after".
	for _, c := range []struct {
		dir, src, desc, when string
		root, forbid         string
	}{
		{"cluster/real-k3s5163-clock-behind-positive", "https://github.com/k3s-io/k3s/issues/5163", `
The node's time zone was corrected after k3s generated its certificates, and its clock now reads
12 hours behind: the fleet-agent dies on "x509: certificate has expired or is not yet valid:
current time ... is before ...". The clock is the root cause; the agent's TLS failure is reported
too, linked under it.`, "current time 2026-11-27T21:28:51Z is before 2026-11-28T07:45:55Z", "cluster/clock-skew", "agent/api-unreachable"},
		{"cluster/real-k3s3047-cert-expired-lookalike", "https://github.com/k3s-io/k3s/issues/3047", `
Look-alike of clock skew: the certificate really has expired ("current time ... is after ..."),
after months without the automatic renewal. A TLS problem (agent/tls), not a clock problem.`, "current time 2026-11-28T09:28:51Z is after 2026-11-27T07:45:55Z", "agent/tls", "cluster/clock-skew"},
	} {
		s := newScenario(c.dir, c.src, c.desc)
		s.expect.RootCauses = []string{c.root}
		if c.root == "cluster/clock-skew" {
			s.expect.Findings = []string{"agent/tls"}
		}
		s.expect.Forbid = []string{c.forbid}
		var log strings.Builder
		t := ago(3 * time.Minute)
		log.WriteString(logrus(t, "info", "Starting /v1, Kind=Secret controller"))
		log.WriteString(logrus(t.Add(2*time.Second), "fatal", `Get "https://rancher.example.com/apis/fleet.cattle.io/v1alpha1/namespaces/cluster-fleet-default-c-m-5n2q7-1d3b4c2e9f10/bundledeployments?limit=500": x509: certificate has expired or is not yet valid: `+c.when))
		s.cluster("edge-nz-1", "downstream")
		s.crashingAgent("edge-nz-1", ago(2*time.Hour), 23, t, t.Add(2*time.Second), log.String())
		out = append(out, s)
	}
	return out
}
