package source

import (
	"bytes"
	"encoding/json"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// RawObject is one object of a bundle exactly as written, payloads included. Only tools that
// replay a bundle into a test API server use it; scans use Load, which keeps no payloads.
type RawObject struct {
	Cluster string // the clusters/<name> it sits under, "" for the bundle root
	File    string
	Object  map[string]any
}

// ReadRawObjects calls fn for every Kubernetes object of a bundle (directory or .tar.gz),
// Lists expanded, in file order. Files that do not parse are skipped; logs are ignored.
func ReadRawObjects(path string, fn func(RawObject) error) error {
	es, err := bundleEntries(path, DefaultLimits, rawBudget())
	if err != nil {
		return err
	}
	for _, e := range stripCommonRoot(es) {
		if e.rel == BundleInfoFile || logPath.MatchString(e.rel) {
			continue
		}
		cluster, _ := clusterOf(e.rel, "")
		if cluster == rootCluster {
			cluster = ""
		}
		data, err := e.read()
		if err != nil || isBinary(data) {
			continue
		}
		docs := rawDocs(data)
		if isFleetDumpEvents(e.rel, bytes.TrimSpace(data)) {
			docs = rawEventDocs(data)
		}
		for _, doc := range docs {
			if err := expandRaw(doc, func(obj map[string]any) error {
				return fn(RawObject{Cluster: cluster, File: e.rel, Object: obj})
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// rawDocs returns each JSON document of a YAML or JSON stream; unparsable ones are dropped.
func rawDocs(data []byte) [][]byte {
	t := bytes.TrimSpace(data)
	var out [][]byte
	if len(t) > 0 && t[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(t))
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				if err != io.EOF {
					return out
				}
				return out
			}
			out = append(out, raw)
		}
	}
	for _, d := range splitYAML(data) {
		if !aliasesFit(d.body, DefaultMaxMemory) {
			continue
		}
		if j, err := yaml.YAMLToJSON(d.body); err == nil && len(bytes.TrimSpace(j)) > 0 && string(j) != "null" {
			out = append(out, j)
		}
	}
	return out
}

// rawEventDocs returns the lines of a fleet dump events file, each Event given the
// apiVersion and kind the file leaves out; other lines are returned as they are.
func rawEventDocs(data []byte) [][]byte {
	var out [][]byte
	for _, ln := range bytes.Split(data, []byte("\n")) {
		ln = bytes.TrimSpace(ln)
		if !json.Valid(ln) {
			continue
		}
		var obj map[string]any
		if hasEventFields(ln) && json.Unmarshal(ln, &obj) == nil {
			obj["apiVersion"], obj["kind"] = "v1", "Event"
			if j, err := json.Marshal(obj); err == nil {
				ln = j
			}
		}
		out = append(out, ln)
	}
	return out
}

func expandRaw(doc []byte, fn func(map[string]any) error) error {
	var h snapshot.Header
	if json.Unmarshal(doc, &h) != nil || !h.IsObject() || h.Kind == BundleInfoKind {
		return nil
	}
	if h.IsList() {
		for _, it := range h.Items {
			if err := expandRaw(it, fn); err != nil {
				return err
			}
		}
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(doc, &obj); err != nil {
		return nil
	}
	return fn(obj)
}

// RawLog is one container log file of a bundle.
type RawLog struct {
	Cluster                   string // "" for the bundle root
	Namespace, Pod, Container string
	Previous                  bool
	Data                      []byte
}

// ReadRawLogs calls fn for every container log file of a bundle (directory or .tar.gz).
func ReadRawLogs(path string, fn func(RawLog) error) error {
	es, err := bundleEntries(path, DefaultLimits, rawBudget())
	if err != nil {
		return err
	}
	for _, e := range stripCommonRoot(es) {
		cluster, rest := clusterOf(e.rel, "")
		if cluster == rootCluster {
			cluster = ""
		}
		m := logPath.FindStringSubmatch(rest)
		if m == nil {
			continue
		}
		data, err := e.read()
		if err != nil {
			continue
		}
		if err := fn(RawLog{Cluster: cluster, Namespace: m[1], Pod: m[2], Container: m[3], Previous: m[4] != "", Data: data}); err != nil {
			return err
		}
	}
	return nil
}

// rawBudget is the memory budget for reading a bundle raw: the loader's.
func rawBudget() *budget {
	max, err := maxMemory(DefaultLimits)
	if err != nil {
		max = DefaultMaxMemory
	}
	return newBudget(max)
}
