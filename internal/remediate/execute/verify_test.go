package execute

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// helmSecret is a release record as Helm's Secret driver stores it.
func helmSecret(name, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
		"data": map[string]any{"release": "SDRzSUFBQUFBQUFBLzZ1dUJRQ0RJYUoyQWdBQUFBPT0="},
		"metadata": map[string]any{"name": name, "namespace": "cattle-fleet-system", "uid": "5b0f6c36-2a3e-4f0e-9c49-1f9d6c1c2b10",
			"labels": map[string]any{"name": "fleet-agent-local", "owner": "helm", "status": "pending-upgrade", "version": "3"}}}}
	u.SetResourceVersion(rv)
	return u
}

// sampleKey is the key sampleBackup writes under.
var sampleKey = []byte("0123456789abcdef0123456789abcdef")

// sampleBackup writes a backup as fix does: one release Secret and one Deployment, and a
// journal line.
func sampleBackup(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "backup")
	key := mustKey(t, sampleKey)
	s := sealed(t, dir, key)
	b, err := newBackups(s, "r1")
	if err != nil {
		t.Fatal(err)
	}
	sec := remediate.Object{Cluster: "local", APIVersion: "v1", Kind: "Secret", Namespace: "cattle-fleet-system", Name: "sh.helm.release.v1.fleet-agent-local.v3"}
	if _, _, err := b.saveObject("helm-rollback-1", sec, helmSecret(sec.Name, "812")); err != nil {
		t.Fatal(err)
	}
	dep := remediate.Object{Cluster: "local", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "cattle-fleet-system", Name: "fleet-agent"}
	d := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "fleet-agent", "namespace": "cattle-fleet-system", "uid": "0d7c3f0e-8b7e-4c1a-a9a4-1c1b4b4e8a01", "resourceVersion": "640"},
		"spec":     map[string]any{"replicas": int64(1)}}}
	if _, _, err := b.saveObject("rollout-restart-1", dep, d); err != nil {
		t.Fatal(err)
	}
	if err := openJournal(s, "r1").Append(Entry{Step: "rollout-restart-1", Phase: PhaseBegin}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// reseal recomputes every digest and the MAC after an edit, as someone holding the key
// could: what the MAC cannot stop, the other checks must.
func reseal(t *testing.T, dir string, edit func([]IndexEntry) []IndexEntry) {
	t.Helper()
	idx, err := ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx = edit(idx)
	var buf bytes.Buffer
	for i := range idx {
		if idx[i].File != "" {
			if b, err := os.ReadFile(filepath.Join(dir, idx[i].File)); err == nil {
				idx[i].SHA256 = sha(b)
			}
		}
		line, _ := json.Marshal(idx[i])
		buf.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, objectsDir, indexFile), buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	key := mustKey(t, sampleKey)
	o, err := readOrigin(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	o.Index, o.Previous = digestOf(buf.Bytes()), nil
	if err := writeOrigin(dir, key, o); err != nil {
		t.Fatal(err)
	}
}

func wantRefused(t *testing.T, dir string, reason string) {
	t.Helper()
	_, err := LoadBackup(dir, mustKey(t, sampleKey))
	var oe *OriginError
	if !errors.As(err, &oe) {
		t.Fatalf("LoadBackup accepted the backup (err %v), want it refused: %s", err, reason)
	}
	if !strings.Contains(err.Error(), reason) {
		t.Errorf("refusal %q does not say %q", err, reason)
	}
}

func TestLoadBackupAcceptsWhatFixWrote(t *testing.T) {
	dir := sampleBackup(t)
	b, err := LoadBackup(dir, mustKey(t, sampleKey))
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Index) != 2 || b.bodies[0].GetName() != "sh.helm.release.v1.fleet-agent-local.v3" {
		t.Fatalf("index %+v", b.Index)
	}
	// Killed after backup.json was rewritten and before the index line was appended: the
	// directory is as consistent as before the save.
	idx, _ := os.ReadFile(filepath.Join(dir, objectsDir, indexFile))
	lines := bytes.SplitAfter(idx, []byte("\n"))
	if err := os.WriteFile(filepath.Join(dir, objectsDir, indexFile), lines[0], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBackup(dir, mustKey(t, sampleKey)); err != nil {
		t.Errorf("a kill between backup.json and the index line: %v", err)
	}
}

func TestLoadBackupRefusesTampering(t *testing.T) {
	secFile := "objects/local/core/Secret/cattle-fleet-system/sh.helm.release.v1.fleet-agent-local.v3.yaml"
	for _, tc := range []struct {
		name, reason string
		tamper       func(t *testing.T, dir string)
	}{
		{"one file edited", "does not match its digest", func(t *testing.T, dir string) {
			p := filepath.Join(dir, secFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte("pending-upgrade"), []byte("deployed"), 1), 0o600)
		}},
		{"index edited", "index.jsonl does not match its digest", func(t *testing.T, dir string) {
			p := filepath.Join(dir, objectsDir, indexFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"resourceVersion":"812"`), []byte(`"resourceVersion":"999"`), 1), 0o600)
		}},
		{"line appended", "index.jsonl does not match its digest", func(t *testing.T, dir string) {
			f, _ := os.OpenFile(filepath.Join(dir, objectsDir, indexFile), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"cluster":"local","apiVersion":"v1","kind":"Node","name":"n1","existed":false}` + "\n")
			f.Close()
		}},
		{"file outside the directory", "is not a path inside the backup directory", func(t *testing.T, dir string) {
			os.MkdirAll(filepath.Join(filepath.Dir(dir), "outside"), 0o700)
			os.WriteFile(filepath.Join(filepath.Dir(dir), "outside", "private.yaml"), []byte("apiVersion: v1\nkind: Secret\n"), 0o600)
			reseal(t, dir, func(idx []IndexEntry) []IndexEntry { idx[0].File = "../outside/private.yaml"; return idx })
		}},
		{"absolute path", "is not a path inside the backup directory", func(t *testing.T, dir string) {
			reseal(t, dir, func(idx []IndexEntry) []IndexEntry { idx[0].File = "/etc/hostname"; return idx })
		}},
		{"symlink out", "symbolic link", func(t *testing.T, dir string) {
			outside := filepath.Join(filepath.Dir(dir), "private.yaml")
			os.WriteFile(outside, []byte("apiVersion: v1\nkind: Secret\n"), 0o600)
			os.Remove(filepath.Join(dir, secFile))
			os.Symlink(outside, filepath.Join(dir, secFile))
			reseal(t, dir, func(idx []IndexEntry) []IndexEntry { return idx })
		}},
		{"body names another Secret", "not the object its index line names", func(t *testing.T, dir string) {
			p := filepath.Join(dir, secFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte("name: sh.helm.release.v1.fleet-agent-local.v3"), []byte("name: fleet-agent-bootstrap"), 1), 0o600)
			reseal(t, dir, func(idx []IndexEntry) []IndexEntry { return idx })
		}},
		{"ClusterRoleBinding added", "not one fix writes", func(t *testing.T, dir string) {
			crb := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: unstick-escalate\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: User\n  name: mallory\n"
			rel := "objects/local/rbac.authorization.k8s.io/ClusterRoleBinding/_cluster/unstick-escalate.yaml"
			os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o700)
			os.WriteFile(filepath.Join(dir, rel), []byte(crb), 0o600)
			reseal(t, dir, func(idx []IndexEntry) []IndexEntry {
				return append(idx, IndexEntry{Step: "helm-rollback-1", Cluster: "local", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding", Name: "unstick-escalate", Existed: true, File: rel})
			})
		}},
		{"guarded kind", "Namespaces are never changed", func(t *testing.T, dir string) {
			reseal(t, dir, func(idx []IndexEntry) []IndexEntry {
				return append(idx, IndexEntry{Cluster: "local", APIVersion: "v1", Kind: "Namespace", Name: "cattle-system"})
			})
		}},
		{"CRD outside a stored-versions trim", "CRDs are never changed", func(t *testing.T, dir string) {
			reseal(t, dir, func(idx []IndexEntry) []IndexEntry {
				return append(idx, IndexEntry{Step: "helm-rollback-1", Cluster: "local", APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "bundles.fleet.cattle.io"})
			})
		}},
		{"written by an older unstick", "older unstick", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, OriginFile))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sampleBackup(t)
			tc.tamper(t, dir)
			wantRefused(t, dir, tc.reason)
		})
	}
}

// A CRD backed up by a stored-versions trim is accepted (and restore writes back only its
// status.storedVersions).
func TestLoadBackupAcceptsATrimmedCRD(t *testing.T) {
	dir := sampleBackup(t)
	b := backupsIn(t, dir, mustKey(t, sampleKey), "r2")
	crd := remediate.Object{Cluster: "local", APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "widgets.example.unstick.dev"}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": crd.APIVersion, "kind": crd.Kind,
		"metadata": map[string]any{"name": crd.Name, "uid": "7f1d6a4e-6a43-4b4e-9f55-2b8f3f1f0c11", "resourceVersion": "900"},
		"status":   map[string]any{"storedVersions": []any{"v1", "v2"}}}}
	if _, _, err := b.saveObject(string(remediate.TrimStoredVersions)+"-0123456789", crd, u); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadBackup(dir, mustKey(t, sampleKey))
	if err != nil {
		t.Fatalf("a trim's CRD backup refused: %v", err)
	}
	if len(loaded.Index) != 3 || loaded.Index[2].action() != remediate.TrimStoredVersions {
		t.Errorf("index %+v", loaded.Index)
	}
}
