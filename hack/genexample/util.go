package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// collectedAt is the evaluation time of the example bundle.
var collectedAt = mustTime("2026-11-28T09:30:00Z")

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func mt(s string) metav1.Time   { return metav1.NewTime(mustTime(s)) }
func mtp(s string) *metav1.Time { t := mt(s); return &t }
func mtt(t time.Time) metav1.Time {
	return metav1.NewTime(t.UTC().Truncate(time.Second))
}
func mmt(s string) metav1.MicroTime { return metav1.NewMicroTime(mustTime(s)) }
func rfc(t time.Time) string        { return t.UTC().Format(time.RFC3339) }
func unixStr(s string) string       { return fmt.Sprintf("%d", mustTime(s).Unix()) }

func ptr[T any](v T) *T { return &v }

// sha256hex returns the hex sha256 of seed.
func sha256hex(seed string) string {
	d := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(d[:])
}

func sha1hex(seed string) string {
	d := sha1.Sum([]byte(seed))
	return hex.EncodeToString(d[:])
}

// uid returns a deterministic RFC 4122 version-4 shaped UID derived from seed.
func uid(seed string) types.UID {
	b, _ := hex.DecodeString(sha256hex("uid:" + seed)[:32])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b)
	return types.UID(h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32])
}

// k8sAlphabet is the alphabet of k8s.io/apimachinery/pkg/util/rand (generateName
// suffixes, pod-template-hash).
const k8sAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// tokenAlphabet is the alphabet of wrangler's randomtoken.Generate (client IDs).
const tokenAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func randFrom(seed, alphabet string, n int) string {
	var sb strings.Builder
	i := 0
	for sb.Len() < n {
		d := sha256.Sum256([]byte(fmt.Sprintf("%s#%d", seed, i)))
		for _, c := range d {
			if sb.Len() >= n {
				break
			}
			sb.WriteByte(alphabet[int(c)%len(alphabet)])
		}
		i++
	}
	return sb.String()
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

func toJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// fleetKeyHash is names.KeyHash from rancher/fleet internal/names/keyhash.go.
func fleetKeyHash(s string) string {
	if len(s) > 100 {
		s = s[:100]
	}
	return sha256hex(s)[:12]
}

// fleetClusterNamespace mirrors clusterNamespace() in rancher/fleet
// internal/cmd/controller/agentmanagement/controllers/cluster/controller.go.
func fleetClusterNamespace(ns, name string) string {
	return safeConcatName("cluster", ns, name, fleetKeyHash(ns+"::"+name))
}

// safeConcatName mirrors names.SafeConcatName (internal/names/safeconcat.go).
func safeConcatName(parts ...string) string {
	full := strings.Join(parts, "-")
	if len(full) < 64 {
		return full
	}
	d := sha256.Sum256([]byte(full))
	c := full[56]
	if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
		return full[0:57] + "-" + hex.EncodeToString(d[:])[0:5]
	}
	return full[0:56] + "-" + hex.EncodeToString(d[:])[0:6]
}

// ---------------------------------------------------------------------------
// output

type listKey struct{ ns, resource string }

// out collects the objects of one cluster and writes them in the shapes real
// tools produce.
type out struct {
	root  string // .../clusters/<name>
	id    string // the cluster's name: seeds UIDs, so they do not depend on where the bundle is written
	dump  bool   // fleet-dump style: <resource>_<namespace>_<name> JSON files
	rv    int    // resourceVersion counter
	lists map[listKey][]any
	files map[string][]byte
}

func newOut(root string, dump bool, rvBase int) *out {
	return &out{root: root, id: filepath.Base(root), dump: dump, rv: rvBase, lists: map[listKey][]any{}, files: map[string][]byte{}}
}

func (o *out) nextRV() string {
	o.rv += 7 + (o.rv % 13)
	return fmt.Sprintf("%d", o.rv)
}

type named interface {
	GetName() string
	GetNamespace() string
}

// add queues an object for the kubectl-style List file of its resource and
// namespace (or, in dump style, writes it as a single JSON file).
func (o *out) add(resource string, obj named) {
	if o.dump {
		name := fmt.Sprintf("%s_%s_%s", resource, obj.GetNamespace(), obj.GetName())
		b, err := json.MarshalIndent(obj, "", "  ")
		if err != nil {
			panic(err)
		}
		o.files[name] = append(b, '\n')
		return
	}
	k := listKey{obj.GetNamespace(), resource}
	o.lists[k] = append(o.lists[k], obj)
}

// single writes one object as its own YAML file (kubectl get <kind> <name> -o yaml).
func (o *out) single(rel string, obj any) {
	b, err := yaml.Marshal(obj)
	if err != nil {
		panic(err)
	}
	o.files[rel] = b
}

// multiDoc writes several objects as one multi-document YAML file.
func (o *out) multiDoc(rel string, objs ...any) {
	var buf bytes.Buffer
	for _, obj := range objs {
		b, err := yaml.Marshal(obj)
		if err != nil {
			panic(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	o.files[rel] = buf.Bytes()
}

func (o *out) log(ns, pod, container string, previous bool, text string) {
	name := container + ".log"
	if previous {
		name = container + ".previous.log"
	}
	o.files[filepath.Join("logs", ns, pod, name)] = []byte(text)
}

func (o *out) flush() error {
	keys := make([]listKey, 0, len(o.lists))
	for k := range o.lists {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].ns != keys[j].ns {
			return keys[i].ns < keys[j].ns
		}
		return keys[i].resource < keys[j].resource
	})
	for _, k := range keys {
		items := o.lists[k]
		sort.SliceStable(items, func(i, j int) bool {
			return items[i].(named).GetName() < items[j].(named).GetName()
		})
		list := map[string]any{
			"apiVersion": "v1",
			"kind":       "List",
			"items":      items,
			"metadata":   map[string]any{"resourceVersion": ""},
		}
		b, err := yaml.Marshal(list)
		if err != nil {
			return err
		}
		dir := k.ns
		if dir == "" {
			dir = "_cluster"
		}
		o.files[filepath.Join(dir, k.resource+".yaml")] = b
	}
	for rel, b := range o.files {
		p := filepath.Join(o.root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
