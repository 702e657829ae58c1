// Package source turns where objects live — an offline bundle (directory or tar.gz) or live
// clusters — into one snapshot.
package source

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	"github.com/unstick-dev/unstick/internal/finding"
	redactpkg "github.com/unstick-dev/unstick/internal/redact"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Limits bound what an offline bundle may make unstick read.
type Limits struct {
	MaxFileBytes  int64 // one file
	MaxTotalBytes int64 // the whole bundle, uncompressed (an archive's member names included)
	MaxFiles      int   // entries of every type: files, directories, links, devices
	MaxLogLines   int   // the tail kept of each container log
	MaxLineBytes  int   // a longer log line is cut
	MaxNameBytes  int   // one path inside the bundle
	// MaxObjects and MaxObjectsPerFile bound the objects decoded (List items count one each).
	MaxObjects        int
	MaxObjectsPerFile int
	// MaxMemory is the loader's memory budget (see budget.go); 0: $UNSTICK_MAX_MEMORY, else
	// DefaultMaxMemory.
	MaxMemory int64
}

// DefaultLimits are generous for real bundles and small for hostile ones.
var DefaultLimits = Limits{
	MaxFileBytes:      256 << 20,
	MaxTotalBytes:     4 << 30,
	MaxFiles:          500_000,
	MaxLogLines:       5000,
	MaxLineBytes:      16 << 10,
	MaxNameBytes:      4096,
	MaxObjects:        1_000_000,
	MaxObjectsPerFile: 250_000,
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
	// open reads the entry: into *buf's memory when buf is not nil and the entry is a
	// directory's file (see readFile), else into memory of its own.
	open func(buf *[]byte) ([]byte, error)
	// skip, when set, says why the entry is skipped without being read (a link).
	skip string
	// size is a directory's file's size as listed (archive members hold their data).
	size int64
	// member is the entry's position in its archive (1-based; 0 outside archives). An
	// int32 beside outside keeps an entry at 80 bytes: a hostile archive lists a million.
	member int32
	// outside marks an entry that is not part of the bundle's tree (an archive member whose
	// path escapes it, or the archive itself when it is cut short): reported, never read.
	outside bool
}

func failed(rel, msg string) entry {
	return entry{rel: rel, outside: true, open: func(*[]byte) ([]byte, error) { return nil, errors.New(msg) }}
}

// Load reads the whole bundle into a snapshot. Problems with single files are recorded in
// the snapshot's errors; only an unreadable bundle is an error.
func (o *Offline) Load(ctx context.Context) (*snapshot.Snapshot, error) {
	lim := o.Limits
	if lim.MaxFiles == 0 {
		lim = DefaultLimits
	}
	lim = lim.withDefaults()
	max, err := maxMemory(lim)
	if err != nil {
		return nil, err
	}
	// The garbage collector works harder as the heap nears the budget instead of letting it
	// grow to twice what is live; unless the user set GOMEMLIMIT, which wins.
	if os.Getenv("GOMEMLIMIT") == "" {
		prev := debug.SetMemoryLimit(max + gcHeadroom)
		defer debug.SetMemoryLimit(prev)
	}
	mem := newBudget(max)
	entries, err := bundleEntries(o.Path, lim, mem)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("bundle %s holds no files", o.Path)
	}
	entries = stripCommonRoot(entries)
	l := &loader{b: snapshot.NewBuilder(), lim: lim, base: baseName(o.Path), mem: mem}
	return l.load(ctx, entries, o.Progress)
}

// gcHeadroom is what the runtime itself and the snapshot's indexes use beyond what the
// loader accounts.
const gcHeadroom = 64 << 20

// withDefaults fills limits a caller left zero (an older Limits literal) from DefaultLimits.
func (lim Limits) withDefaults() Limits {
	if lim.MaxNameBytes == 0 {
		lim.MaxNameBytes = DefaultLimits.MaxNameBytes
	}
	if lim.MaxObjects == 0 {
		lim.MaxObjects = DefaultLimits.MaxObjects
	}
	if lim.MaxObjectsPerFile == 0 {
		lim.MaxObjectsPerFile = DefaultLimits.MaxObjectsPerFile
	}
	return lim
}

// accepted says what --from reads, for every message refusing something else.
const accepted = "unstick reads a directory, a .tar.gz/.tgz archive, or a single .yaml/.yml/.json file"

// bundleEntries lists the files of a bundle directory, archive or single file, in path order.
func bundleEntries(path string, lim Limits, mem *budget) ([]entry, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading bundle: %w", err)
	}
	if fi.IsDir() {
		return listDir(path, lim)
	}
	name := strings.ToLower(filepath.Base(path))
	switch {
	case strings.HasSuffix(name, ".tar.gz") || strings.HasSuffix(name, ".tgz"):
		return readArchive(path, lim, mem)
	case declaredStructured(name):
		return singleFile(path, fi, lim), nil
	}
	head := make([]byte, 512)
	if f, err := os.Open(path); err == nil {
		n, _ := io.ReadFull(f, head)
		head = head[:n]
		f.Close()
	}
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return readArchive(path, lim, mem) // a gzip archive under another name
	case bytes.HasPrefix(head, []byte("PK\x03\x04")) || bytes.HasPrefix(head, []byte("PK\x05\x06")) || strings.HasSuffix(name, ".zip"):
		return nil, fmt.Errorf("bundle %s is a zip archive: %s (unpack it, or repack it with tar czf)", path, accepted)
	case len(head) >= 262 && string(head[257:262]) == "ustar" || strings.HasSuffix(name, ".tar"):
		return nil, fmt.Errorf("bundle %s is a plain tar archive: %s (compress it with gzip)", path, accepted)
	}
	return nil, fmt.Errorf("bundle %s is neither a directory nor a .tar.gz archive: %s", path, accepted)
}

// singleFile is a bundle of one YAML or JSON file (what `kubectl get -o yaml > x.yaml` writes).
func singleFile(path string, fi os.FileInfo, lim Limits) []entry {
	size := fi.Size()
	return []entry{{rel: filepath.Base(path), open: func(*[]byte) ([]byte, error) {
		if size > lim.MaxFileBytes {
			return nil, fmt.Errorf("file is %d MiB, more than the %d MiB limit", size>>20, lim.MaxFileBytes>>20)
		}
		return os.ReadFile(path)
	}}}
}

func baseName(p string) string {
	b := filepath.Base(filepath.Clean(p))
	for _, ext := range []string{".tar.gz", ".tgz", ".yaml", ".yml", ".json"} {
		if strings.HasSuffix(strings.ToLower(b), ext) {
			return b[:len(b)-len(ext)]
		}
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
	var files []int    // the regular files of out, in the walk's order
	var paths []string // where each is
	seen := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		// Every entry counts toward the file limit, whatever its type.
		if seen++; seen > lim.MaxFiles {
			return fmt.Errorf("bundle %s has more than %d files (entries of every type count)", root, lim.MaxFiles)
		}
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
		rel, _ := filepath.Rel(root, p)
		files, paths = append(files, len(out)), append(paths, p)
		out = append(out, entry{rel: filepath.ToSlash(rel)})
		return nil
	})
	// The files' sizes are asked for after the walk, on all processors; a file that cannot
	// be asked, or the first that takes the bundle over its size, stops it, as when
	// the walk was still on it.
	if serr := sizeFiles(out, files, paths, lim, root); serr != nil {
		err = serr
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, err
}

// sizeFiles sets the size of each of the entries at files, and their reader.
func sizeFiles(out []entry, files []int, paths []string, lim Limits, root string) error {
	errs := make([]error, len(files))
	workers := min(runtime.GOMAXPROCS(0), len(files))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for k := w; k < len(files); k += workers {
				info, err := os.Lstat(paths[k])
				if err != nil {
					errs[k] = err
					continue
				}
				out[files[k]].size = info.Size()
			}
		})
	}
	wg.Wait()
	var total int64
	for k, i := range files {
		if errs[k] != nil {
			return errs[k]
		}
		total += out[i].size
		if total > lim.MaxTotalBytes {
			return fmt.Errorf("bundle %s is larger than %d MiB", root, lim.MaxTotalBytes>>20)
		}
		size, full := out[i].size, paths[k]
		out[i].open = func(buf *[]byte) ([]byte, error) {
			if size > lim.MaxFileBytes {
				return nil, fileTooBig(size, lim)
			}
			if buf == nil {
				return os.ReadFile(full)
			}
			return readFile(full, size, buf)
		}
	}
	return nil
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
	mem  *budget

	decoded atomic.Int64 // objects decoded so far, in every file
	// full, once set, says why the bundle stopped being read (a limit of the whole bundle);
	// notRead counts the files left unread after it.
	full    atomic.Pointer[finding.ScanError]
	notRead atomic.Int64
	// strs holds one string table per worker (snapshot.Strings is for one goroutine at a
	// time): the objects of every file share their repeated strings.
	strs chan *snapshot.Strings
}

// takeStrings returns a string table no other goroutine is using, or nil.
func (l *loader) takeStrings() *snapshot.Strings {
	select {
	case s := <-l.strs:
		return s
	default:
		return nil
	}
}

// giveStrings returns a table taken with takeStrings.
func (l *loader) giveStrings(s *snapshot.Strings) {
	if s == nil {
		return
	}
	select {
	case l.strs <- s:
	default:
	}
}

const rootCluster = "\x00root"

// logPathMatch is logPath's submatches of rel, without running it on the names that
// cannot match (most of a bundle's).
func logPathMatch(rel string) []string {
	if !strings.HasSuffix(rel, ".log") {
		return nil
	}
	return logPath.FindStringSubmatch(rel)
}

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
	l.strs = make(chan *snapshot.Strings, workers)
	for range workers {
		l.strs <- new(snapshot.Strings)
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	var done int
	var mu sync.Mutex
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte // the worker's read buffer (see readFile)
			for i := range jobs {
				l.file(es[i], single, &buf)
				// An archive member's bytes are let go once read.
				if n := int64(len(es[i].data)); n > 0 {
					es[i].data = nil
					l.mem.free(n)
				}
				if progress != nil {
					mu.Lock()
					done++
					progress(done)
					mu.Unlock()
				}
			}
		}()
	}
	err := readInOrder(ctx, es, jobs)
	close(jobs)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if stop := l.full.Load(); stop != nil {
		e := *stop
		if n := l.notRead.Load(); n > 0 {
			e.Message += fmt.Sprintf("; %d more files were not read", n)
		}
		l.b.Error(e)
	}
	s := l.b.Build()
	unknownContext(s, l.nameRoot(s), single)
	return s, nil
}

// bigFile is the size from which a file is read before the others.
const bigFile = 1 << 20

// readInOrder hands the entries to the workers: the big files first, largest first, then
// the rest in path order. A management cluster's bundle holds a few big Lists (its Fleet
// Clusters, ClusterRegistrations) that sort after thousands of small ones: read last, one
// worker would decode them alone while the others wait. The snapshot does not depend on the
// order (the builder sorts what it holds). Nothing is allocated per entry: a hostile bundle
// may list a million.
func readInOrder(ctx context.Context, es []entry, jobs chan<- int) error {
	var big []int
	isBig := map[int]bool{} // decided before any is handed out: workers let an entry's data go
	for i := range es {
		if es[i].weight() >= bigFile {
			big = append(big, i)
			isBig[i] = true
		}
	}
	sort.SliceStable(big, func(a, b int) bool { return es[big[a]].weight() > es[big[b]].weight() })
	for _, i := range big {
		if err := ctx.Err(); err != nil {
			return err
		}
		jobs <- i
	}
	for i := range es {
		if isBig[i] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		jobs <- i
	}
	return nil
}

// weight is an entry's size: a directory's file's as listed, an archive member's data.
func (e *entry) weight() int64 { return e.size + int64(len(e.data)) }

// unknownContext marks unknown the context of the cluster whose files sit at the bundle's
// root (named root by nameRoot, or single by the bundle's metadata) when the bundle
// recorded none: its name is the bundle directory's or the metadata's, which no kubeconfig
// needs to share, so commands carry a <context> placeholder rather than that name.
// Clusters under clusters/<name>/ keep their names as contexts (docs/bundle-format.md).
func unknownContext(s *snapshot.Snapshot, root, single string) {
	for _, c := range s.Clusters {
		if c.ContextSource == snapshot.ContextFromName && c.Name != "" && (c.Name == root || c.Name == single) {
			c.Context, c.ContextSource = "", snapshot.ContextUnknown
		}
	}
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
		if have.Context == "" {
			have.Context, have.ContextServer = c.Context, c.ContextServer
		}
		if have.KubernetesVersion == "" {
			have.KubernetesVersion = c.KubernetesVersion
		}
		have.CRDsCollected = have.CRDsCollected || c.CRDsCollected
		if have.CRDObjects == nil {
			have.CRDObjects = c.CRDObjects
		}
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
		l.b.DeclareCluster(snapshot.ClusterInfo{Name: c.Name, Role: c.Role, Server: c.Server, FleetCluster: c.FleetCluster, Context: c.Context, ContextServer: c.ContextServer, ServerVersion: c.KubernetesVersion})
		if c.CRDsCollected {
			l.b.MarkCRDsCollected(c.Name)
		}
		l.crdObjects(c.Name, c.CRDObjects)
	}
	for _, e := range collectErrs {
		l.b.Error(e) // what went wrong when the bundle was collected
	}
}

// nameRoot names the cluster of a bundle without clusters/: "local" when it holds Fleet
// Clusters (it is a management cluster), else the bundle's own name. It returns that name
// ("" when every file is under clusters/).
func (l *loader) nameRoot(s *snapshot.Snapshot) string {
	c := s.Cluster(rootCluster)
	if c == nil {
		return ""
	}
	name := l.base
	if len(c.FleetClusters) > 0 && s.Cluster("local") == nil {
		name = "local"
	}
	if s.Cluster(name) != nil {
		name = name + "-root"
	}
	c.Name = name
	if c.ContextSource == snapshot.ContextFromName {
		c.Context = name // it was named after the placeholder
	}
	for i := range s.Errors {
		if s.Errors[i].Cluster == rootCluster {
			s.Errors[i].Cluster = name
		}
	}
	sort.Slice(s.Clusters, func(i, j int) bool { return s.Clusters[i].Name < s.Clusters[j].Name })
	s.Reindex()
	return name
}

func (e entry) read() ([]byte, error) {
	if e.open != nil {
		return e.open(nil)
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

// file reads one entry. A directory's file is read into *buf, which is set to nil when
// what was read may be kept (only the typed List decode is known to copy all it keeps).
func (l *loader) file(e entry, single string, buf *[]byte) {
	if e.skip != "" {
		l.b.Skip(e.rel, e.skip)
		return
	}
	if l.full.Load() != nil {
		l.notRead.Add(1)
		return
	}
	cluster, rest := clusterOf(e.rel, single)
	if e.outside {
		cluster, rest = rootCluster, ""
	}
	data, err := l.read(e, buf)
	if err != nil {
		l.b.Error(finding.ScanError{Cluster: displayCluster(cluster), File: e.rel, Message: err.Error()})
		return
	}
	data = utf8Text(data)
	if m := logPathMatch(rest); m != nil || isDumpLog(rest, data) {
		*buf = nil
		// Splitting a log into lines holds about twice its size for a moment.
		cost := 2 * int64(len(data))
		if !l.mem.reserve(cost) {
			l.b.Error(finding.ScanError{Cluster: displayCluster(cluster), File: e.rel, Message: fmt.Sprintf(
				"not read: reading this %s log needs about %s, more than is left of the memory budget of %s (raise it with %s)",
				mib(int64(len(data))), mib(cost), mib(l.mem.max), MemoryEnv)})
			return
		}
		defer l.mem.release(cost)
		if m == nil {
			l.dumpLogs(cluster, e.rel, data)
			return
		}
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
	if !l.objects(cluster, e.rel, data) || cap(*buf) > maxKeptBuffer {
		*buf = nil
	}
}

// maxKeptBuffer is the largest read buffer a worker keeps for the next file.
const maxKeptBuffer = 16 << 20

// read reads an entry: a directory's file into *buf (readFile), anything else as it comes.
func (l *loader) read(e entry, buf *[]byte) ([]byte, error) {
	if e.open == nil {
		return e.data, nil
	}
	return e.open(buf)
}

func fileTooBig(size int64, lim Limits) error {
	return fmt.Errorf("file is %d MiB, more than the %d MiB limit", size>>20, lim.MaxFileBytes>>20)
}

// readFile reads the file at path, of about size bytes, into *buf's memory (grown as
// needed), as os.ReadFile reads it: the thousands of small files of a fleet's bundle are
// read without allocating and zeroing a buffer for each.
func readFile(path string, size int64, buf *[]byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := (*buf)[:0]
	if want := int(size) + 512; cap(b) < want {
		b = make([]byte, 0, want)
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			*buf = b
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
	}
}

// dumpLogs reads the containers' logs of a cluster-info dump's logs.txt, and says which ones
// kubectl could not read, so that no check takes a missing log for a quiet one.
func (l *loader) dumpLogs(cluster, rel string, data []byte) {
	for _, d := range splitDumpLog(data) {
		if d.unread != "" {
			l.b.SkipAt(rel, d.line, fmt.Sprintf("no log of container %s of pod %s/%s: kubectl could not read it (%s)", d.container, d.namespace, d.pod, redactpkg.String(d.unread)))
			continue
		}
		l.b.AddLog(cluster, d.namespace, d.pod, d.container, false, fmt.Sprintf("%s:%d", rel, d.line), tailLines(d.body, l.lim))
	}
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

// tailLines keeps the last MaxLogLines lines, each cut at MaxLineBytes, with credentials
// redacted (internal/redact): no report, bundle or dashboard ever quotes a token from a log.
// Redaction comes before the cut to the tail, from where a PEM block or a wrapped base64
// block that the cut falls in starts, so that its body is seen for what it is.
func tailLines(data []byte, lim Limits) []string {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	lines = lines[redactpkg.TailStart(lines, lim.MaxLogLines):]
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
	if extra := len(lines) - lim.MaxLogLines; extra > 0 {
		lines, long = lines[extra:], long[extra:]
	}
	for i, ln := range lines {
		if long[i] || len(ln) > lim.MaxLineBytes {
			lines[i] = ln[:min(len(ln), lim.MaxLineBytes)] + " …[cut]"
		}
	}
	return lines
}

// redactMargin is how much of a cut log line past the cut is still redacted.
const redactMargin = 4 << 10
