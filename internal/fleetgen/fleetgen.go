// Package fleetgen writes a synthetic Rancher management cluster of N downstream clusters as an
// offline bundle, for scale tests and benchmarks: per cluster a Fleet Cluster, a
// ClusterRegistration and 10 BundleDeployments (one the agent's) with status as Fleet writes
// it. Most clusters are healthy; a few percent are stuck in each of the ways the checks know
// (agent upgrade stuck behind an ErrApplied agent bundle, stale heartbeat, bundle NotReady,
// WaitApplied). Output is deterministic for a given N and seed. Used by hack/genfleet and the
// scale benchmarks.
package fleetgen

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

type obj = map[string]any

var collected = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

func ts(d time.Duration) string { return collected.Add(-d).Format(time.RFC3339) }

func hash(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// Write writes a management-cluster bundle of n downstream clusters to dir; stuck is the
// fraction of clusters stuck in each way (0.02 = 2 %).
func Write(dir string, n int, stuck float64, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	root := filepath.Join(dir, "clusters", "local")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	meta := fmt.Sprintf("apiVersion: unstick.dev/v1alpha1\nkind: BundleInfo\ncollectedAt: %q\ncollector: genfleet\nclusters:\n  - name: local\n    role: management\n", collected.Format(time.RFC3339))
	if err := os.WriteFile(filepath.Join(dir, "unstick-bundle.yaml"), []byte(meta), 0o644); err != nil {
		return err
	}
	var clusters, regs []any
	bds := map[string][]any{}
	apps := []string{"monitoring-stack", "ingress-config", "logging", "cert-manager", "policies", "backup", "security-scan", "istio", "storage"}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("c-m-%08x", uint32(i)*2654435761)
		ns := "cluster-fleet-default-" + name + "-" + hash("fleet-default::" + name)[:12]
		clientID := hash("client" + name)[:32]
		gen := int64(2)
		r := rng.Float64()
		mode := "healthy"
		switch {
		case r < stuck:
			mode = "agent-errapplied"
		case r < 2*stuck:
			mode = "heartbeat"
		case r < 3*stuck:
			mode = "notready"
		case r < 4*stuck:
			mode = "waitapplied"
		}
		lastSeen := ts(time.Duration(rng.IntN(600)) * time.Second)
		if mode == "heartbeat" {
			lastSeen = ts(3 * time.Hour)
		}
		state, ready := "", "11/11"
		if mode != "healthy" {
			state, ready = "ErrApplied", "10/11"
		}
		clusters = append(clusters, obj{
			"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
			"metadata": obj{"name": name, "namespace": "fleet-default", "uid": hash("uid" + name)[:8] + "-0000-4000-8000-" + hash("uid" + name)[8:20],
				"creationTimestamp": ts(90 * 24 * time.Hour), "resourceVersion": fmt.Sprint(1000 + i),
				"labels": obj{"management.cattle.io/cluster-name": name, "management.cattle.io/cluster-display-name": fmt.Sprintf("edge-%05d", i)}},
			"spec": obj{"clientID": clientID, "kubeConfigSecret": name + "-kubeconfig", "kubeConfigSecretNamespace": "fleet-default", "redeployAgentGeneration": gen},
			"status": obj{
				"namespace": ns, "agentDeployedGeneration": gen, "agentMigrated": true, "agentNamespaceMigrated": true, "cattleNamespaceMigrated": true,
				"agent":   obj{"lastSeen": lastSeen, "namespace": "cattle-fleet-system"},
				"display": obj{"readyBundles": ready, "state": state},
				"summary": obj{"desiredReady": 11, "ready": 10},
				"conditions": []any{
					obj{"type": "Processed", "status": "True", "lastUpdateTime": ts(60 * 24 * time.Hour)},
					obj{"type": "Imported", "status": "True", "lastUpdateTime": ts(60 * 24 * time.Hour)},
					obj{"type": "Ready", "status": "True", "lastUpdateTime": ts(2 * time.Hour)},
				},
			},
		})
		regs = append(regs, obj{
			"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "ClusterRegistration",
			"metadata": obj{"name": "request-" + hash("reg" + name)[:5], "namespace": "fleet-default", "creationTimestamp": ts(90 * 24 * time.Hour)},
			"spec":     obj{"clientID": clientID, "clientRandom": hash("rand" + name)[:16], "clusterLabels": obj{"management.cattle.io/cluster-name": name}},
			"status":   obj{"granted": true, "clusterName": name},
		})
		bundles := append([]string{"fleet-agent-" + name}, apps...)
		for j, b := range bundles {
			dep := "s-" + hash(b + "v2")[:61] + ":" + hash(b+name)
			applied, isReady := dep, true
			deployedStatus, readyStatus, msg := "True", "True", ""
			since := ts(30 * 24 * time.Hour)
			switch {
			case j == 0 && mode == "agent-errapplied":
				applied = "s-" + hash(b + "v1")[:61] + ":" + hash(b+name)
				deployedStatus, msg, since = "False", "another operation (install/upgrade/rollback) is in progress", ts(2*time.Hour)
			case j == 0 && mode == "waitapplied":
				applied = "s-" + hash(b + "v1")[:61] + ":" + hash(b+name)
			case j == 1 && mode == "notready":
				isReady, readyStatus, msg, since = false, "False", "deployment.apps monitoring/prometheus [progressing] Deployment does not have minimum availability.", ts(time.Hour)
			}
			bd := obj{
				"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment",
				"metadata": obj{"name": b, "namespace": ns, "creationTimestamp": ts(60 * 24 * time.Hour), "generation": 3,
					"labels": obj{"fleet.cattle.io/bundle-name": b, "fleet.cattle.io/bundle-namespace": "fleet-default",
						"fleet.cattle.io/cluster": name, "fleet.cattle.io/cluster-namespace": "fleet-default", "fleet.cattle.io/managed": "true"}},
				"spec": obj{"deploymentID": dep, "stagedDeploymentID": dep, "options": obj{"namespace": "default"}},
				"status": obj{
					"appliedDeploymentID": applied, "ready": isReady, "nonModified": true,
					"display": obj{"deployed": "True", "monitored": "True", "state": ""},
					"conditions": []any{
						obj{"type": "Installed", "status": "True", "lastUpdateTime": ts(30 * 24 * time.Hour)},
						obj{"type": "Deployed", "status": deployedStatus, "message": ifStatus(deployedStatus, msg), "lastUpdateTime": since},
						obj{"type": "Monitored", "status": "True", "lastUpdateTime": ts(30 * 24 * time.Hour)},
						obj{"type": "Ready", "status": readyStatus, "message": ifStatus(readyStatus, msg), "lastUpdateTime": since},
					},
				},
			}
			bds[ns] = append(bds[ns], bd)
		}
	}
	if err := writeList(filepath.Join(root, "fleet-default", "clusters.json"), clusters); err != nil {
		return err
	}
	if err := writeList(filepath.Join(root, "fleet-default", "clusterregistrations.json"), regs); err != nil {
		return err
	}
	for ns, items := range bds {
		if err := writeList(filepath.Join(root, ns, "bundledeployments.json"), items); err != nil {
			return err
		}
	}
	return nil
}

func ifStatus(status, msg string) string {
	if status == "False" {
		return msg
	}
	return ""
}

func writeList(path string, items []any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(obj{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
