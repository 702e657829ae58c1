// Package source turns where objects live — an offline bundle (directory or tar.gz) or live
// clusters — into one snapshot.
package source

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/finding"
	redactpkg "github.com/unstick-dev/unstick/internal/redact"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Limits bound what an offline bundle may make unstick read.
type Limits struct {
	MaxFileBytes  int64 // one file
	MaxTotalBytes int64 // the whole bundle, uncompressed
	MaxFiles      int
	MaxLogLines   int // the tail kept of each container log
	MaxLineBytes  int // a longer log line is cut
}

// DefaultLimits are generous for real bundles and small for hostile ones.
var DefaultLimits = Limits{
	MaxFileBytes:  256 << 20,
	MaxTotalBytes: 4 << 30,
	MaxFiles:      500_000,
	MaxLogLines:   5000,
	MaxLineBytes:  16 << 10,
}

// Offline reads a bundle from a directory or a .tar.gz/.tgz file.
type Offline struct {
	Path   string
	Limits Limits
	// Progress, if set, is told how many files were read so far.
	Progress func(files int)
}

type entry struct {
	rel  string // slash-separated path relative to the bundle root
	data []byte
	open func() ([]byte, error)
	// outside marks an entry that is not part of the bundle's tree (an archive member whose
	// path escapes it, or the archive itself when it is cut short): reported, never read.
	outside bool
	// skip, when set, says why the entry is skipped without being read (a link).
	skip string
}

func failed(rel, msg string) entry {
	return entry{rel: rel, outside: true, open: func() ([]byte, error) { return nil, errors.New(msg) }}
}

// Load reads the whole bundle into a snapshot. Problems with single files are recorded in
// the snapshot's errors; only an unreadable bundle is an error.
func (o *Offline) Load(ctx context.Context) (*snapshot.Snapshot, error) {
	lim := o.Limits
	if lim.MaxFiles == 0 {
		lim = DefaultLimits
	}
	entries, err := bundleEntries(o.Path, lim)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("bundle %s holds no files", o.Path)
	}
	entries = stripCommonRoot(entries)
	l := &loader{b: snapshot.NewBuilder(), lim: lim, base: baseName(o.Path)}
	return l.load(ctx, entries, o.Progress)
}

// bundleEntries lists the files of a bundle directory or archive, in path order.
func bundleEntries(path string, lim Limits) ([]entry, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading bundle: %w", err)
	}
	if fi.IsDir() {
		return listDir(path, lim)
	}
	return readTarGz(path, lim)
}

func baseName(p string) string {
	b := filepath.Base(filepath.Clean(p))
	for _, ext := range []string{".tar.gz", ".tgz"} {
		b = strings.TrimSuffix(b, ext)
	}
	return b
}

func listDir(root string, lim Limits) ([]entry, error) {
	// The path given may itself be a link to the bundle (a "latest" link): follow that one,
	// as WalkDir would not; links inside the bundle are never followed.
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	var out []entry
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return fmt.Errorf("reading bundle: %w", err)
			}
			// An unreadable sub-directory or file: report it, read the rest.
			rel, _ := filepath.Rel(root, p)
			out = append(out, failed(filepath.ToSlash(rel), err.Error()))
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			rel, _ := filepath.Rel(root, p)
			out = append(out, entry{rel: filepath.ToSlash(rel), skip: "symbolic link, not followed"})
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // directories, devices, sockets
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if len(out) >= lim.MaxFiles {
			return fmt.Errorf("bundle %s has more than %d files", root, lim.MaxFiles)
		}
		total += info.Size()
		if total > lim.MaxTotalBytes {
			return fmt.Errorf("bundle %s is larger than %d MiB", root, lim.MaxTotalBytes>>20)
		}
		size := info.Size()
		full := p
		out = append(out, entry{rel: rel, open: func() ([]byte, error) {
			if size > lim.MaxFileBytes {
				return nil, fmt.Errorf("file is %d MiB, more than the %d MiB limit", size>>20, lim.MaxFileBytes>>20)
			}
			return os.ReadFile(full)
		}})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, err
}

func readTarGz(file string, lim Limits) ([]entry, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading bundle: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("bundle %s is neither a directory nor a .tar.gz archive: %w", file, err)
	}
	tr := tar.NewReader(zr)
	var out []entry
	var total int64
	// cut records an archive that ends early or is corrupt part-way: what was read before is
	// kept and the archive itself is named in the errors.
	cut := func(err error) ([]entry, error) {
		if len(out) == 0 {
			return nil, fmt.Errorf("bundle %s: reading archive: %w", file, err)
		}
		out = append(out, failed(filepath.Base(file), fmt.Sprintf("archive is truncated or corrupt after %d entries: %v; the entries before were read", len(out), err)))
		sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
		return out, nil
	}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			// The tar stream ended: read what is left of the gzip stream (padding) so that its
			// checksum is verified; a corrupt archive must not pass for a complete one.
			if _, err := io.Copy(io.Discard, io.LimitReader(zr, 1<<20)); err != nil {
				return cut(err)
			}
			break
		}
		if err != nil {
			return cut(err)
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		rel := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
			out = append(out, failed(h.Name, "path escapes the bundle; ignored"))
			continue
		}
		if h.Typeflag != tar.TypeReg {
			// links and devices are never followed or created
			out = append(out, entry{rel: rel, skip: fmt.Sprintf("archive entry of type %q (link or device), not read", h.Typeflag)})
			continue
		}
		if len(out) >= lim.MaxFiles {
			return nil, fmt.Errorf("bundle %s has more than %d files", file, lim.MaxFiles)
		}
		if h.Size > lim.MaxFileBytes {
			size := h.Size
			out = append(out, entry{rel: rel, open: func() ([]byte, error) {
				return nil, fmt.Errorf("file is %d MiB, more than the %d MiB limit", size>>20, lim.MaxFileBytes>>20)
			}})
			continue
		}
		total += h.Size
		if total > lim.MaxTotalBytes {
			return nil, fmt.Errorf("bundle %s unpacks to more than %d MiB", file, lim.MaxTotalBytes>>20)
		}
		// h.Size is within the limits checked above: read exactly that. (io.ReadAll would keep
		// a 512-byte buffer for each of half a million empty members, and up to twice the size
		// of big ones.) A header that lies about its size costs one such buffer, then the
		// archive is reported cut.
		data := make([]byte, h.Size)
		_, err = io.ReadFull(tr, data)
		if err != nil {
			return cut(fmt.Errorf("reading %s: %w", rel, err))
		}
		out = append(out, entry{rel: rel, data: data})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

// stripCommonRoot removes one top directory shared by every entry, as `tar czf x.tgz dir/`
// writes, unless that directory is itself part of the layout.
// Entries outside the bundle's tree (escaping archive paths) neither count nor move.
func stripCommonRoot(es []entry) []entry {
	first := ""
	for _, e := range es {
		if e.outside {
			continue
		}
		top, _, ok := strings.Cut(e.rel, "/")
		if !ok || top == "clusters" || top == "logs" || (first != "" && top != first) {
			return es
		}
		first = top
	}
	if first == "" {
		return es
	}
	for i := range es {
		if !es[i].outside {
			es[i].rel = strings.TrimPrefix(es[i].rel, first+"/")
		}
	}
	return es
}

type loader struct {
	b    *snapshot.Builder
	lim  Limits
	base string
	info *BundleInfo
}

const rootCluster = "\x00root"

var logPath = regexp.MustCompile(`(?:^|/)logs/([^/]+)/([^/]+)/([^/]+?)(\.previous)?\.log$`)

func (l *loader) load(ctx context.Context, es []entry, progress func(int)) (*snapshot.Snapshot, error) {
	// The metadata first: it names the clusters. Besides the bundle's own, each
	// clusters/<name>/ may hold one (single-cluster bundles put side by side).
	var subs []clusterMeta
	rest := es[:0:0]
	for _, e := range es {
		name, isMeta := metadataOf(e.rel)
		if !isMeta || e.outside {
			rest = append(rest, e)
			continue
		}
		data, err := e.read()
		var bi *BundleInfo
		if err == nil {
			bi, err = ParseBundleInfo(data)
		}
		if err != nil {
			l.b.Error(finding.ScanError{Cluster: name, File: e.rel, Message: "bundle metadata: " + err.Error()})
			continue
		}
		if name == "" {
			l.info = bi
		} else {
			subs = append(subs, clusterMeta{name, bi})
		}
	}
	es = rest
	single := ""
	if l.info != nil && len(l.info.Clusters) == 1 {
		single = l.info.Clusters[0].Name
	}
	l.declare(subs)

	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan entry)
	var wg sync.WaitGroup
	var done int
	var mu sync.Mutex
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range jobs {
				l.file(e, single)
				if progress != nil {
					mu.Lock()
					done++
					progress(done)
					mu.Unlock()
				}
			}
		}()
	}
	var err error
	for _, e := range es {
		if err = ctx.Err(); err != nil {
			break
		}
		jobs <- e
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	s := l.b.Build()
	l.nameRoot(s)
	return s, nil
}

// clusterMeta is the metadata found in clusters/<name>/.
type clusterMeta struct {
	name string
	info *BundleInfo
}

// metadataOf reports whether rel is a metadata file: the bundle's own (name "") or that of
// clusters/<name>/.
func metadataOf(rel string) (name string, ok bool) {
	if rel == BundleInfoFile {
		return "", true
	}
	parts := strings.Split(rel, "/")
	if len(parts) == 3 && parts[0] == "clusters" && parts[1] != "" && parts[2] == BundleInfoFile {
		return parts[1], true
	}
	return "", false
}

// declare tells the builder what the metadata says: the bundle's own first, then what each
// clusters/<name>/ says of itself fills in the rest. A cluster's own metadata describes it by
// the name of its directory (the entry of that name, or its only entry). The collection time
// is the bundle's, else the latest of the clusters'.
func (l *loader) declare(subs []clusterMeta) {
	infos := map[string]*BundleInfoCluster{}
	var order []string
	var collectedAt time.Time
	var collectErrs []finding.ScanError
	add := func(c BundleInfoCluster) {
		have := infos[c.Name]
		if have == nil {
			infos[c.Name] = &c
			order = append(order, c.Name)
			return
		}
		if have.Role == "" {
			have.Role = c.Role
		}
		if have.Server == "" {
			have.Server = c.Server
		}
		if have.FleetCluster == "" {
			have.FleetCluster = c.FleetCluster
		}
		have.CRDsCollected = have.CRDsCollected || c.CRDsCollected
	}
	if l.info != nil {
		collectedAt = l.info.CollectedAt
		for _, c := range l.info.Clusters {
			add(c)
		}
		collectErrs = append(collectErrs, l.info.Errors...)
	}
	for _, sub := range subs {
		if l.info == nil || l.info.CollectedAt.IsZero() {
			if sub.info.CollectedAt.After(collectedAt) {
				collectedAt = sub.info.CollectedAt
			}
		}
		var own *BundleInfoCluster
		for i, c := range sub.info.Clusters {
			if c.Name == sub.name {
				own = &sub.info.Clusters[i]
			}
		}
		if own == nil && len(sub.info.Clusters) == 1 {
			own = &sub.info.Clusters[0]
		}
		if own != nil {
			c := *own
			c.Name = sub.name
			add(c)
		}
		for _, e := range sub.info.Errors {
			if e.Cluster == "" {
				e.Cluster = sub.name
			}
			collectErrs = append(collectErrs, e)
		}
	}
	if !collectedAt.IsZero() {
		l.b.SetCollectedAt(collectedAt)
	}
	for _, name := range order {
		c := infos[name]
		l.b.DeclareCluster(snapshot.ClusterInfo{Name: c.Name, Role: c.Role, Server: c.Server, FleetCluster: c.FleetCluster})
		if c.CRDsCollected {
			l.b.MarkCRDsCollected(c.Name)
		}
	}
	for _, e := range collectErrs {
		l.b.Error(e) // what went wrong when the bundle was collected
	}
}

// nameRoot names the cluster of a bundle without clusters/: "local" when it holds Fleet
// Clusters (it is a management cluster), else the bundle's own name.
func (l *loader) nameRoot(s *snapshot.Snapshot) {
	c := s.Cluster(rootCluster)
	if c == nil {
		return
	}
	name := l.base
	if len(c.FleetClusters) > 0 && s.Cluster("local") == nil {
		name = "local"
	}
	if s.Cluster(name) != nil {
		name = name + "-root"
	}
	c.Name = name
	for i := range s.Errors {
		if s.Errors[i].Cluster == rootCluster {
			s.Errors[i].Cluster = name
		}
	}
	sort.Slice(s.Clusters, func(i, j int) bool { return s.Clusters[i].Name < s.Clusters[j].Name })
	s.Reindex()
}

func (e entry) read() ([]byte, error) {
	if e.open != nil {
		return e.open()
	}
	return e.data, nil
}

// clusterOf splits clusters/<name>/rest into the cluster name and rest.
func clusterOf(rel, single string) (cluster, rest string) {
	if strings.HasPrefix(rel, "clusters/") {
		parts := strings.SplitN(rel, "/", 3)
		if len(parts) == 3 && parts[1] != "" {
			return parts[1], parts[2]
		}
	}
	if single != "" {
		return single, rel
	}
	return rootCluster, rel
}

func (l *loader) file(e entry, single string) {
	if e.skip != "" {
		l.b.Skip(e.rel, e.skip)
		return
	}
	cluster, rest := clusterOf(e.rel, single)
	if e.outside {
		cluster, rest = rootCluster, ""
	}
	data, err := e.read()
	if err != nil {
		l.b.Error(finding.ScanError{Cluster: displayCluster(cluster), File: e.rel, Message: err.Error()})
		return
	}
	data = utf8Text(data)
	if m := logPath.FindStringSubmatch(rest); m != nil {
		l.b.AddLog(cluster, m[1], m[2], m[3], m[4] != "", e.rel, tailLines(data, l.lim))
		return
	}
	if documentation(rest) {
		l.b.Skip(e.rel, "documentation, not a Kubernetes object")
		return
	}
	if isBinary(data) {
		l.b.Skip(e.rel, "binary data, not a Kubernetes object")
		return
	}
	l.objects(cluster, e.rel, data)
}

func displayCluster(c string) string {
	if c == rootCluster {
		return ""
	}
	return c
}

func isBinary(b []byte) bool {
	n := min(len(b), 8000)
	return bytes.IndexByte(b[:n], 0) >= 0 || bytes.HasPrefix(b, []byte{0x1f, 0x8b})
}

// utf8Text drops a UTF-8 byte-order mark and turns UTF-16 text with a byte-order mark (what
// PowerShell's `kubectl get -o yaml > file` writes) into UTF-8; anything else is returned as is.
func utf8Text(b []byte) []byte {
	switch {
	case bytes.HasPrefix(b, []byte{0xef, 0xbb, 0xbf}):
		return b[3:]
	case len(b) >= 2 && len(b)%2 == 0 && (b[0] == 0xff && b[1] == 0xfe || b[0] == 0xfe && b[1] == 0xff):
		order := binary.ByteOrder(binary.LittleEndian)
		if b[0] == 0xfe {
			order = binary.BigEndian
		}
		u := make([]uint16, 0, len(b)/2-1)
		for i := 2; i < len(b); i += 2 {
			u = append(u, order.Uint16(b[i:]))
		}
		return []byte(string(utf16.Decode(u)))
	}
	return b
}

// documentation reports files that describe a bundle (README.md and the like): skipped
// without parsing, even when their examples look like objects.
func documentation(rel string) bool {
	switch strings.ToLower(path.Ext(rel)) {
	case ".md", ".markdown", ".rst", ".adoc", ".html", ".htm":
		return true
	}
	return false
}

// declaredStructured reports files whose name says they hold YAML or JSON, so that a parse
// failure is an error; anything else that does not parse is merely skipped.
func declaredStructured(rel string) bool {
	switch strings.ToLower(path.Ext(rel)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func looksLikeObject(b []byte) bool {
	t := bytes.TrimSpace(b)
	return len(t) > 0 && (t[0] == '{' || bytes.Contains(b, []byte("apiVersion:")) || bytes.Contains(b, []byte(`"apiVersion"`)))
}

// objects reads every object of one file.
func (l *loader) objects(cluster, rel string, data []byte) {
	t := bytes.TrimSpace(data)
	if len(t) == 0 {
		l.b.Skip(rel, "empty file")
		return
	}
	strict := declaredStructured(rel) || looksLikeObject(t)
	var found int
	var parseErr *finding.ScanError
	if t[0] == '{' || t[0] == '[' {
		found, parseErr = l.jsonStream(cluster, rel, data)
	} else {
		found, parseErr = l.yamlDocs(cluster, rel, data)
	}
	if parseErr != nil {
		if strict || found > 0 {
			parseErr.Cluster = displayCluster(cluster)
			l.b.Error(*parseErr)
		} else {
			l.b.Skip(rel, "not YAML or JSON")
		}
		return
	}
	if found == 0 {
		l.b.Skip(rel, "no Kubernetes object (no apiVersion and kind)")
	}
}

func (l *loader) jsonStream(cluster, rel string, data []byte) (int, *finding.ScanError) {
	if apiVersion, kind, ok := listItemKind(data); ok {
		if objs, ok := snapshot.PrepareList(apiVersion, kind, data); ok && len(objs) > 0 {
			src := fmt.Sprintf("%s:%d", rel, lineAt(data, int64(leadingSpace(data))))
			for i, o := range objs {
				l.b.Add(cluster, fmt.Sprintf("%s items[%d]", src, i), o)
			}
			return len(objs), nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	found := 0
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return found, nil
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
			return found, &finding.ScanError{File: rel, Line: lineAt(data, off), Message: msg}
		}
		r := bytes.TrimSpace(raw)
		if len(r) > 0 && r[0] == '[' {
			var items []json.RawMessage
			if err := json.Unmarshal(r, &items); err != nil {
				return found, &finding.ScanError{File: rel, Message: "invalid JSON array: " + err.Error()}
			}
			for _, it := range items {
				found += l.object(cluster, rel, 0, it)
			}
			continue
		}
		found += l.object(cluster, rel, lineAt(data, dec.InputOffset()-int64(len(raw))), raw)
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

func (l *loader) yamlDocs(cluster, rel string, data []byte) (int, *finding.ScanError) {
	found := 0
	for _, d := range splitYAML(data) {
		if len(bytes.TrimSpace(stripComments(d.body))) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSON(d.body)
		if err != nil {
			line := d.line
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				n, _ := strconv.Atoi(m[1])
				line = d.line + n - 1
			}
			msg := yamlLine.ReplaceAllString(err.Error(), "line "+strconv.Itoa(line))
			return found, &finding.ScanError{File: rel, Line: line, Message: "invalid YAML: " + strings.TrimPrefix(msg, "error converting YAML to JSON: ")}
		}
		found += l.object(cluster, rel, d.line+leadingBlank(d.body), j)
	}
	return found, nil
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

// object adds one JSON object (expanding Lists); it returns how many objects it found.
func (l *loader) object(cluster, rel string, line int, raw []byte) int {
	var h snapshot.Header
	if err := json.Unmarshal(raw, &h); err != nil {
		return 0 // a scalar or array document: not an object
	}
	if !h.IsObject() {
		return 0
	}
	if h.Kind == BundleInfoKind && strings.HasPrefix(h.APIVersion, "unstick.dev/") {
		return 1 // metadata found away from the root: not an object to judge
	}
	src := rel
	if line > 0 {
		src = fmt.Sprintf("%s:%d", rel, line)
	}
	if h.IsList() {
		n := 0
		for i, it := range h.Items {
			n += l.object(cluster, fmt.Sprintf("%s items[%d]", src, i), 0, it)
		}
		if n == 0 {
			return 1 // an empty list is still a Kubernetes document
		}
		return n
	}
	if h.Metadata.Name == "" {
		l.b.Error(finding.ScanError{Cluster: displayCluster(cluster), File: rel, Line: line, Message: fmt.Sprintf("%s object has no metadata.name; ignored", h.Kind)})
		return 1
	}
	if err := l.b.AddJSON(cluster, src, &h, raw); err != nil {
		l.b.Error(finding.ScanError{Cluster: displayCluster(cluster), File: rel, Line: line, Message: "cannot decode " + err.Error()})
	}
	return 1
}

// tailLines keeps the last MaxLogLines lines, each cut at MaxLineBytes, with credentials
// redacted (internal/redact): no report, bundle or dashboard ever quotes a token from a log.
func tailLines(data []byte, lim Limits) []string {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > lim.MaxLogLines {
		lines = lines[len(lines)-lim.MaxLogLines:]
	}
	long := make([]bool, len(lines))
	for i, ln := range lines {
		ln = strings.TrimRight(ln, "\r")
		// Redact only what is kept, and a margin past the cut so that a credential across it
		// is still seen whole: redacting a 100 MB line would take a minute.
		long[i] = len(ln) > lim.MaxLineBytes
		if long[i] {
			ln = ln[:min(len(ln), lim.MaxLineBytes+redactMargin)]
		}
		lines[i] = ln
	}
	// All lines at once: a PEM block spans lines.
	redactpkg.Lines(lines)
	for i, ln := range lines {
		if long[i] || len(ln) > lim.MaxLineBytes {
			lines[i] = ln[:min(len(ln), lim.MaxLineBytes)] + " …[cut]"
		}
	}
	return lines
}

// redactMargin is how much of a cut log line past the cut is still redacted.
const redactMargin = 4 << 10
