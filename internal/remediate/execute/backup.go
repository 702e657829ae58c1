package execute

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/redact"
	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Layout of a backup directory:
//
//	journal.jsonl                 what ran, phase by phase (journal.go)
//	objects/index.jsonl           one line per backed-up object, first line per object wins
//	objects/<cluster>/<group>/<Kind>/<namespace>/<name>.yaml
//	                              each object as it was before unstick first wrote it: written
//	                              once, never overwritten. Helm release Secrets keep their
//	                              payload (data.release) so restore can put them back exactly;
//	                              every file is 0600 and the directories 0700.
//	evidence/<run>/<step>/<cluster>/events/<Kind>.<namespace>.<name>.yaml
//	evidence/<run>/<step>/<cluster>/logs/<namespace>/<pod>/<container>.log
//	evidence/<run>/<step>/<cluster>/objects/...   (observe: the incident's objects, Secret
//	                              payloads, ConfigMap and environment values and
//	                              last-applied-configuration annotations removed; logs with
//	                              credentials redacted: internal/redact)
const (
	objectsDir  = "objects"
	indexFile   = "index.jsonl"
	evidenceDir = "evidence"
)

// IndexEntry records one backed-up object.
type IndexEntry struct {
	Time       time.Time `json:"time"`
	Run        string    `json:"run"`
	Step       string    `json:"step"`
	Cluster    string    `json:"cluster"`
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name"`
	// Existed is false for an object the step creates: restoring means deleting it.
	Existed bool   `json:"existed"`
	File    string `json:"file,omitempty"` // relative to the backup directory
	// SHA256 is the digest of File: restore refuses a file that no longer matches it.
	SHA256          string `json:"sha256,omitempty"`
	UID             string `json:"uid,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// Key identifies the object.
func (e IndexEntry) Key() string {
	return remediate.Object{Cluster: e.Cluster, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}.Key()
}

// Backups writes into one backup directory.
type Backups struct {
	dir  string
	run  string
	mu   sync.Mutex
	seal *seal
}

// newBackups writes into a sealed backup directory.
func newBackups(s *seal, run string) (*Backups, error) {
	for _, d := range []string{filepath.Join(s.dir, objectsDir), filepath.Join(s.dir, evidenceDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("backup directory: %w", err)
		}
	}
	return &Backups{dir: s.dir, run: run, seal: s}, nil
}

// bind records which cluster a cluster name reaches, before the first backup of one of its
// objects; a name already recorded must still reach the same cluster.
func (b *Backups) bind(ctx context.Context, cl *cluster) error {
	s := b.seal
	s.mu.Lock()
	known, ok := s.origin.Clusters[cl.name]
	s.mu.Unlock()
	id, err := identify(ctx, cl)
	if err != nil {
		return err
	}
	if ok {
		if known.KubeSystemUID != id.KubeSystemUID {
			return refuseBackup(b.dir, "context %s now reaches another cluster (%s, kube-system uid %s) than the one this backup directory was written for (%s, kube-system uid %s); use another --backup-dir",
				cl.name, id.Server, id.KubeSystemUID, known.Server, known.KubeSystemUID)
		}
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.origin.Clusters[cl.name] = id
	return s.write()
}

func objectFile(o remediate.Object) string {
	group := o.Group()
	if group == "" {
		group = "core"
	}
	ns := o.Namespace
	if ns == "" {
		ns = "_cluster"
	}
	return filepath.Join(objectsDir, safeName(o.Cluster), safeName(group), safeName(o.Kind), safeName(ns), safeName(o.Name)+".yaml")
}

// saveObject backs up an object before a step writes it (u nil: it does not exist yet). The
// file is written once: a rerun after an interruption keeps the first copy, which holds the
// state before unstick changed anything. It reports whether an earlier copy was kept.
func (b *Backups) saveObject(step string, o remediate.Object, u *unstructured.Unstructured) (string, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := IndexEntry{Time: time.Now().UTC(), Run: b.run, Step: step, Cluster: o.Cluster, APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
	kept := false
	if u != nil {
		e.Existed, e.UID, e.ResourceVersion = true, string(u.GetUID()), u.GetResourceVersion()
		e.File = filepath.ToSlash(objectFile(o))
		clean := u.DeepCopy()
		unstructured.RemoveNestedField(clean.Object, "metadata", "managedFields")
		y, err := yaml.Marshal(clean.Object)
		if err != nil {
			return "", false, fmt.Errorf("encoding the backup of %s: %w", o.Ref(), err)
		}
		path := filepath.Join(b.dir, objectFile(o))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return "", false, err
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		switch {
		case errors.Is(err, fs.ErrExist):
			kept = true
			old, err := readLocal(b.dir, e.File)
			if err != nil {
				return "", false, fmt.Errorf("reading the earlier backup of %s: %w", o.Ref(), err)
			}
			e.SHA256 = sha(old)
		case err != nil:
			return "", false, fmt.Errorf("writing the backup of %s: %w", o.Ref(), err)
		default:
			header := fmt.Sprintf("# %s on %s, saved by unstick (step %s) before any change; restore with: unstick restore %s --object %s\n",
				o.Ref(), o.Cluster, step, b.dir, o.Ref())
			body := append([]byte(header), y...)
			e.SHA256 = sha(body)
			if _, err := f.Write(body); err != nil {
				f.Close()
				return "", false, err
			}
			if err := f.Sync(); err != nil {
				f.Close()
				return "", false, err
			}
			if err := f.Close(); err != nil {
				return "", false, err
			}
		}
	}
	if err := b.appendIndex(e); err != nil {
		return "", false, err
	}
	return e.File, kept, nil
}

// appendIndex adds a line to the index, first recording in OriginFile the index's digest
// with the line and without it: killed between the two writes, the directory still verifies.
func (b *Backups) appendIndex(e IndexEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	s := b.seal
	s.mu.Lock()
	defer s.mu.Unlock()
	path := filepath.Join(b.dir, objectsDir, indexFile)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading the backup index: %w", err)
	}
	prev := digestOf(old)
	s.origin.Previous = &prev
	s.origin.Index = digestOf(append(append(old, line...), '\n'))
	if err := s.write(); err != nil {
		return err
	}
	return appendBytes(path, append(line, '\n'))
}

// ReadIndex reads a backup directory's object index, in the order written.
func ReadIndex(dir string) ([]IndexEntry, error) {
	f, err := os.Open(filepath.Join(dir, objectsDir, indexFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []IndexEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e IndexEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// evidence saves, for each object, its events and the last logs of its pods (a Deployment's,
// a Job's, or the Pod itself); with copies, the objects too (Secret payloads removed). What
// cannot be read (a kubelet that does not answer, a permission missing) is noted and skipped:
// evidence never stops a step.
func (b *Backups) evidence(ctx context.Context, cl *cluster, step string, objs []remediate.Object, copies bool) []string {
	base := filepath.Join(b.dir, evidenceDir, safeName(b.run), safeName(step), safeName(cl.name))
	var notes []string
	note := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	seenPod := map[string]bool{}
	for _, o := range objs {
		if o.Cluster != cl.name || o.Create {
			continue
		}
		if copies {
			if err := b.copyObject(ctx, cl, base, o); err != nil {
				note("%s: %v", o.Ref(), err)
			}
		}
		if err := b.events(ctx, cl, base, o); err != nil {
			note("events of %s: %v", o.Ref(), err)
		}
		for _, pod := range b.podsOf(ctx, cl, o) {
			if seenPod[pod.Namespace+"/"+pod.Name] {
				continue
			}
			seenPod[pod.Namespace+"/"+pod.Name] = true
			for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
				if err := b.logs(ctx, cl, base, pod, c.Name); err != nil {
					note("logs of %s/%s/%s: %v", pod.Namespace, pod.Name, c.Name, err)
				}
			}
		}
	}
	return notes
}

func (b *Backups) copyObject(ctx context.Context, cl *cluster, base string, o remediate.Object) error {
	gvr, namespaced, err := cl.resource(o.APIVersion, o.Kind)
	if err != nil {
		return err
	}
	ns := o.Namespace
	if !namespaced {
		ns = ""
	}
	u, err := cl.dyn.Resource(gvr).Namespace(ns).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	// Evidence is for reading: the same allowlist as a collected bundle (the backup under
	// objects/ keeps the whole object, for restore).
	snapshot.Keep(o.APIVersion, o.Kind, u.Object, map[string]int{})
	y, err := yaml.Marshal(u.Object)
	if err != nil {
		return err
	}
	ns = o.Namespace
	if ns == "" {
		ns = "_cluster"
	}
	return writeNew(filepath.Join(base, "objects", safeName(o.Kind)+"."+safeName(ns)+"."+safeName(o.Name)+".yaml"), y)
}

func (b *Backups) events(ctx context.Context, cl *cluster, base string, o remediate.Object) error {
	sel := fields.Set{"involvedObject.name": o.Name, "involvedObject.kind": o.Kind}.AsSelector().String()
	list, err := cl.kube.Core.Events(o.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return nil
	}
	for i := range list.Items {
		list.Items[i].ManagedFields = nil
	}
	list.APIVersion, list.Kind = "v1", "List"
	y, err := yaml.Marshal(list)
	if err != nil {
		return err
	}
	ns := o.Namespace
	if ns == "" {
		ns = "_cluster"
	}
	return writeNew(filepath.Join(base, "events", safeName(o.Kind)+"."+safeName(ns)+"."+safeName(o.Name)+".yaml"), y)
}

// podsOf lists the pods whose logs are evidence for an object.
func (b *Backups) podsOf(ctx context.Context, cl *cluster, o remediate.Object) []corev1.Pod {
	var sel string
	switch {
	case o.Kind == "Pod" && o.Group() == "":
		p, err := cl.kube.Core.Pods(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return []corev1.Pod{*p}
	case o.Kind == "Deployment" && o.Group() == "apps":
		d, err := cl.kube.Apps.Deployments(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil || d.Spec.Selector == nil {
			return nil
		}
		s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return nil
		}
		sel = s.String()
	case o.Kind == "Job" && o.Group() == "batch":
		sel = labels.Set{"batch.kubernetes.io/job-name": o.Name}.AsSelector().String()
	default:
		return nil
	}
	list, err := cl.kube.Core.Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil
	}
	if len(list.Items) > 10 {
		list.Items = list.Items[:10]
	}
	return list.Items
}

func (b *Backups) logs(ctx context.Context, cl *cluster, base string, pod corev1.Pod, container string) error {
	// Lines above the 500 kept, so that a key or a wrapped block the tail starts in is
	// redacted as a whole (redact.Tail).
	const keep = 500
	tail := int64(keep + 200)
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	rc, err := cl.kube.Core.Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container, TailLines: &tail}).Stream(lctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 4<<20))
	if err != nil {
		return err
	}
	// Evidence is for reading and sharing: credentials in the log are redacted.
	if len(data) == 0 {
		return writeNew(filepath.Join(base, "logs", safeName(pod.Namespace), safeName(pod.Name), safeName(container)+".log"), nil)
	}
	lines := redact.Tail(strings.Split(strings.TrimRight(string(data), "\n"), "\n"), keep)
	return writeNew(filepath.Join(base, "logs", safeName(pod.Namespace), safeName(pod.Name), safeName(container)+".log"), []byte(strings.Join(lines, "\n")+"\n"))
}

// writeNew writes a file that must not exist yet (0600), making its directories (0700).
func writeNew(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
