package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// fileDocs is what one file's documents came to: objects added, and the documents that were
// not turned into objects, recorded only once the file is known to be YAML or JSON.
type fileDocs struct {
	cluster string
	objects int
	skips   []snapshot.Skipped
	stopped bool // a limit was reached: the rest of the file is not read
	// reserved is what the file holds of the memory budget while it is parsed: its parse cost,
	// or what a document expands to when that is more.
	reserved int64
	refused  bool // a document went over the memory budget: an error, whatever the file
	// typed says the file was read as one List by the typed decode (snapshot.PrepareList).
	typed bool
}

func (f *fileDocs) skip(rel string, line int, item, reason string) {
	if item != "" {
		reason = item + ": " + reason
	}
	f.skips = append(f.skips, snapshot.Skipped{File: rel, Line: line, Reason: reason})
}

// objects reads every object of one file. typedOnly says data was read by the typed List
// decode alone, which keeps nothing of it (every other reading may keep parts of it).
func (l *loader) objects(cluster, rel string, data []byte) (typedOnly bool) {
	t := bytes.TrimSpace(data)
	if len(t) == 0 {
		l.b.Skip(rel, "empty file")
		return
	}
	strict := declaredStructured(rel) || looksLikeObject(t)
	cost := int64(len(data)) * yamlParseCost
	if t[0] == '{' || t[0] == '[' {
		cost = int64(len(data)) * jsonParseCost
	}
	if !l.mem.reserve(cost) {
		l.b.Error(finding.ScanError{Cluster: displayCluster(cluster), File: rel, Message: fmt.Sprintf(
			"not read: reading this %s file needs about %s, more than is left of the memory budget of %s (raise it with %s)",
			mib(int64(len(data))), mib(cost), mib(l.mem.max), MemoryEnv)})
		return
	}
	f := fileDocs{cluster: cluster, reserved: cost}
	defer func() { l.mem.release(f.reserved) }()
	dumped := hasDumpLogs(data)
	if dumped {
		l.dumpLogs(cluster, rel, data)
		data = blankDumpLogs(data)
	}
	var parseErr *finding.ScanError
	switch {
	case isFleetDumpEvents(rel, t):
		l.fleetDumpEvents(cluster, rel, data, &f)
	case t[0] == '{' || t[0] == '[':
		parseErr = l.jsonStream(cluster, rel, data, &f)
	default:
		parseErr = l.yamlDocs(cluster, rel, data, &f)
	}
	if parseErr != nil && !strict && f.objects == 0 && !f.refused {
		l.b.Skip(rel, "not YAML or JSON")
		return
	}
	for _, sk := range f.skips {
		l.b.SkipAt(sk.File, sk.Line, sk.Reason)
	}
	if parseErr != nil {
		parseErr.Cluster = displayCluster(cluster)
		l.b.Error(*parseErr)
		return
	}
	if f.objects == 0 && len(f.skips) == 0 {
		l.b.Skip(rel, "no Kubernetes object (only comments or empty documents)")
	}
	return f.typed && !dumped
}

func (l *loader) jsonStream(cluster, rel string, data []byte, f *fileDocs) *finding.ScanError {
	if apiVersion, kind, ok := listItemKind(data); ok {
		room, why, whole := l.room(f, len(data))
		strs := l.takeStrings()
		objs, ok, more := snapshot.PrepareList(apiVersion, kind, data, room, strs)
		l.giveStrings(strs)
		line := lineAt(data, int64(leadingSpace(data)))
		if ok && (len(objs) > 0 || more) && l.admitAll(f, len(objs), len(data)) {
			l.b.AddItems(cluster, rel+":"+strconv.Itoa(line), objs)
			f.objects += len(objs)
			f.typed = true
			if more {
				l.stop(f, rel, line, fmt.Sprintf("items[%d]", len(objs)), why, whole)
			}
			return nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			off := dec.InputOffset()
			var se *json.SyntaxError
			if errors.As(err, &se) {
				off = se.Offset
			}
			msg := "invalid JSON: " + err.Error()
			if errors.Is(err, io.ErrUnexpectedEOF) {
				msg = "invalid JSON: unexpected end of input (truncated file?)"
			}
			return &finding.ScanError{File: rel, Line: lineAt(data, off), Message: msg}
		}
		line := lineAt(data, dec.InputOffset()-int64(len(raw)))
		r := bytes.TrimSpace(raw)
		if len(r) > 0 && r[0] == '[' {
			var items []json.RawMessage
			if err := json.Unmarshal(r, &items); err != nil {
				return &finding.ScanError{File: rel, Line: line, Message: "invalid JSON array: " + err.Error()}
			}
			for i, it := range items {
				if f.stopped {
					break
				}
				l.object(cluster, rel, line, fmt.Sprintf("[%d]", i), it, f)
			}
			if len(items) == 0 {
				f.skip(rel, line, "", "an empty array, no Kubernetes object")
			}
			continue
		}
		l.object(cluster, rel, line, "", raw, f)
		if f.stopped {
			return nil
		}
	}
}

// listItemKind reads, without decoding the file, the apiVersion and kind of the first item
// of a JSON List as kubectl and Go's encoders write one (keys sorted, so a List's
// apiVersion comes before its items, and an item's apiVersion and kind before anything
// else): {"apiVersion":"v1","items":[{"apiVersion":"fleet.cattle.io/v1alpha1","kind":...
// Anything else — another key order, escapes, an empty list — answers ok=false and the
// file is read the general way.
func listItemKind(data []byte) (apiVersion, kind string, ok bool) {
	s := jsonSniffer{b: data}
	if !s.next('{') {
		return "", "", false
	}
	for {
		key, ok := s.str()
		if !ok || !s.next(':') {
			return "", "", false
		}
		if key == "items" {
			break
		}
		if _, ok := s.str(); !ok || !s.next(',') {
			return "", "", false
		}
	}
	if !s.next('[') || !s.next('{') {
		return "", "", false
	}
	for apiVersion == "" || kind == "" {
		key, ok := s.str()
		if !ok || !s.next(':') {
			return "", "", false
		}
		v, ok := s.str()
		if !ok {
			return "", "", false
		}
		switch key {
		case "apiVersion":
			apiVersion = v
		case "kind":
			kind = v
		}
		if !s.next(',') {
			return "", "", false
		}
	}
	return apiVersion, kind, true
}

type jsonSniffer struct {
	b []byte
	i int
}

func (s *jsonSniffer) skipSpace() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// next consumes c after optional white space.
func (s *jsonSniffer) next(c byte) bool {
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str consumes a string without escapes.
func (s *jsonSniffer) str() (string, bool) {
	if !s.next('"') {
		return "", false
	}
	end := bytes.IndexByte(s.b[s.i:], '"')
	if end < 0 || bytes.IndexByte(s.b[s.i:s.i+end], '\\') >= 0 {
		return "", false
	}
	v := string(s.b[s.i : s.i+end])
	s.i += end + 1
	return v, true
}

func leadingSpace(b []byte) int { return len(b) - len(bytes.TrimLeft(b, " \t\r\n")) }

func lineAt(data []byte, off int64) int {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

func (l *loader) yamlDocs(cluster, rel string, data []byte, f *fileDocs) *finding.ScanError {
	for _, d := range splitYAML(data) {
		if len(bytes.TrimSpace(stripComments(d.body))) == 0 {
			continue
		}
		if e := l.aliasRoom(rel, d, f); e != nil {
			return e
		}
		j, err := yaml.YAMLToJSON(d.body)
		if err != nil {
			return invalidYAML(rel, d, err)
		}
		l.object(cluster, rel, d.line+leadingBlank(d.body), "", j, f)
		if f.stopped {
			break
		}
	}
	return nil
}

func invalidYAML(rel string, d doc, err error) *finding.ScanError {
	line := d.line
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		line = d.line + n - 1
	}
	msg := yamlLine.ReplaceAllString(err.Error(), "line "+strconv.Itoa(line))
	return &finding.ScanError{File: rel, Line: line, Message: "invalid YAML: " + strings.TrimPrefix(msg, "error converting YAML to JSON: ")}
}

// aliasRoom makes room in the memory budget for document d with its aliases expanded, before
// it is converted: past what the file reserved, the file's reservation grows to what the
// expanded document needs, or the document is refused and the rest of the file not read.
func (l *loader) aliasRoom(rel string, d doc, f *fileDocs) *finding.ScanError {
	if !mayAlias(d.body) {
		return nil
	}
	x, err := yamlExpansion(d.body)
	if err != nil {
		return invalidYAML(rel, d, err)
	}
	need := x.need()
	if need <= f.reserved {
		return nil
	}
	// Give back what the file holds before waiting, so that two files growing at once never
	// wait on each other.
	l.mem.release(f.reserved)
	f.reserved = 0
	if need < l.mem.max && l.mem.reserve(need) {
		f.reserved = need
		return nil
	}
	f.refused = true
	return &finding.ScanError{File: rel, Line: d.line + leadingBlank(d.body), Message: aliasLimit(x, l.mem.max)}
}

type doc struct {
	line int
	body []byte
}

// splitYAML cuts a multi-document stream at "---" lines, remembering where each starts.
func splitYAML(data []byte) []doc {
	var out []doc
	start, startLine, line := 0, 1, 1
	for i := 0; i <= len(data); {
		end := bytes.IndexByte(data[i:], '\n')
		var ln []byte
		next := len(data) + 1
		if end < 0 {
			ln = data[i:]
		} else {
			ln = data[i : i+end]
			next = i + end + 1
		}
		if isDocSep(ln) {
			out = append(out, doc{line: startLine, body: data[start:i]})
			start, startLine = min(next, len(data)), line+1
			if inlineDoc(ln) {
				// "--- {...}": the document starts on the separator's line
				start, startLine = i+4, line
			}
		}
		i = next
		line++
	}
	out = append(out, doc{line: startLine, body: data[start:]})
	return out
}

func isDocSep(ln []byte) bool {
	ln = bytes.TrimRight(ln, " \t\r")
	return bytes.Equal(ln, []byte("---")) || bytes.HasPrefix(ln, []byte("--- ")) || bytes.HasPrefix(ln, []byte("---#"))
}

// inlineDoc tells whether a separator line carries the start of its document: "--- {"a": 1}".
func inlineDoc(ln []byte) bool {
	rest := bytes.TrimSpace(bytes.TrimPrefix(ln, []byte("---")))
	return len(ln) > 4 && ln[3] == ' ' && len(rest) > 0 && rest[0] != '#'
}

// leadingBlank counts the blank and comment lines a document starts with, so that an object
// is cited at its first line of content.
func leadingBlank(b []byte) int {
	n := 0
	for _, ln := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(ln); len(t) > 0 && t[0] != '#' {
			break
		}
		n++
	}
	return n
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, ln := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(ln); len(t) > 0 && t[0] != '#' {
			out = append(out, ln)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// object adds one JSON document found at rel:line (item names it inside a List: items[3]),
// expanding Lists. A document it does not turn into an object is recorded in f with the reason.
func (l *loader) object(cluster, rel string, line int, item string, raw []byte, f *fileDocs) {
	l.objectOf(cluster, rel, line, item, raw, f, nil)
}

// objectOf is object for a document that, as an item of a typed List (PodList), takes its
// apiVersion and kind from the List when it has none of its own: the API server's own list
// responses, and `kubectl cluster-info dump`, leave them out of every item.
func (l *loader) objectOf(cluster, rel string, line int, item string, raw []byte, f *fileDocs, list *snapshot.Header) {
	var h snapshot.Header
	if list != nil && list.Kind != "List" {
		h.APIVersion, h.Kind = list.APIVersion, strings.TrimSuffix(list.Kind, "List")
	}
	if why := snapshot.NotAnObject(raw, &h); why != "" {
		if item != "" && (why == "an empty mapping, not a Kubernetes object" || strings.HasPrefix(why, "an empty document")) {
			why = "an empty List item"
		}
		f.skip(rel, line, item, why)
		return
	}
	if h.Kind == BundleInfoKind && strings.HasPrefix(h.APIVersion, "unstick.dev/") {
		f.objects++ // metadata found away from the root: not an object to judge
		return
	}
	src := rel
	if line > 0 {
		src = fmt.Sprintf("%s:%d", rel, line)
	}
	if item != "" {
		src += " " + item
	}
	if h.IsList() {
		for i, it := range h.Items {
			if f.stopped {
				break
			}
			l.objectOf(cluster, rel, line, fmt.Sprintf("%sitems[%d]", dotted(item), i), it, f, &h)
		}
		f.objects++ // a List, even empty, is a Kubernetes document
		return
	}
	if why := snapshot.Mismatch(h.APIVersion, h.Kind); why != "" {
		f.skip(rel, line, item, why)
		return
	}
	if h.Metadata.Name == "" {
		l.b.Error(finding.ScanError{Cluster: displayCluster(cluster), File: rel, Line: line, Message: withItem(item, fmt.Sprintf("%s object has no metadata.name; ignored", h.Kind))})
		f.objects++
		return
	}
	if !l.admit(f, rel, line, item, len(raw)) {
		return
	}
	if err := l.b.AddJSON(cluster, src, &h, raw); err != nil {
		l.b.Error(finding.ScanError{Cluster: displayCluster(cluster), File: rel, Line: line, Message: withItem(item, "cannot decode "+err.Error())})
	}
	f.objects++
}

func dotted(item string) string {
	if item == "" {
		return ""
	}
	return item + "."
}

func withItem(item, msg string) string {
	if item == "" {
		return msg
	}
	return item + ": " + msg
}
