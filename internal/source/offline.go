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
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	open func() ([]byte, error)
	// outside marks an entry that is not part of the bundle's tree (an archive member whose
	// path escapes it, or the archive itself when it is cut short): reported, never read.
	outside bool
	// skip, when set, says why the entry is skipped without being read (a link).
	skip string
	// member is the entry's position in its archive (1-based; 0 outside archives).
	member int
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
	return []entry{{rel: filepath.Base(path), open: func() ([]byte, error) {
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
	var total int64
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
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
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

// readTarGz reads an archive's members into memory under the default memory budget.
func readTarGz(file string, lim Limits) ([]entry, error) {
	return readArchive(file, lim, rawBudget())
}

// readArchive reads an archive's members into memory, charging what it holds to mem.
func readArchive(file string, lim Limits, mem *budget) ([]entry, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading bundle: %w", err)
	}
	defer f.Close()
	cr := &countingReader{r: f}
	zr, err := gzip.NewReader(bufio.NewReader(cr))
	if err != nil {
		return nil, fmt.Errorf("bundle %s is neither a directory nor a .tar.gz archive (%s): %w", file, accepted, err)
	}
	tr := tar.NewReader(zr)
	var out []entry
	var total, unpacked int64
	members, last := 0, ""
	// Members are held in memory until read: at most half the memory budget, the other half
	// is for what they decode to.
	maxTotal := min(lim.MaxTotalBytes, mem.max/2)
	// stop records an archive that ends early, is corrupt part-way or goes over a limit: what
	// was read before is kept and the archive itself is named in the errors, with how far it
	// got. With nothing read before, the bundle cannot be read at all.
	stop := func(err error, refused bool) ([]entry, error) {
		where := fmt.Sprintf("after %d entries (%s unpacked from %s of %s", members, mib(unpacked), mib(cr.n), mib(fileSize(f)))
		if last != "" {
			where += ", last member read " + shortName(last)
		}
		where += ")"
		what := "truncated or corrupt"
		if refused {
			what = "refused"
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("bundle %s: reading archive: %s %s: %w", file, what, where, err)
		}
		what = map[bool]string{false: "is truncated or corrupt", true: "was refused"}[refused]
		out = append(out, failed(filepath.Base(file), fmt.Sprintf("archive %s %s: %v; the entries before were read, the rest was not", what, where, err)))
		return sortEntries(out), nil
	}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			// The tar stream ended: read what is left of the gzip stream (padding) so that its
			// checksum is verified; a corrupt archive must not pass for a complete one.
			if _, err := io.Copy(io.Discard, io.LimitReader(zr, 1<<20)); err != nil {
				return stop(err, false)
			}
			break
		}
		if err != nil {
			return stop(err, false)
		}
		// Every entry counts, whatever its type: a million links or directories cost memory too.
		members++
		if members > lim.MaxFiles {
			return stop(fmt.Errorf("it has more than %d files (entries of every type count)", lim.MaxFiles), true)
		}
		// Names count toward the bytes held; a name longer than any real path is not kept.
		total += int64(len(h.Name)) + entryOverhead
		if total > maxTotal {
			return stop(overTotal(maxTotal, lim, mem), true)
		}
		if len(h.Name) > lim.MaxNameBytes {
			// Named on the archive: the name itself is what cannot be kept.
			out = append(out, failed(filepath.Base(file), fmt.Sprintf("member %d: its name (%s) is %d bytes, more than the %d-byte limit; not read", members, shortName(h.Name), len(h.Name), lim.MaxNameBytes)))
			continue
		}
		last = h.Name
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
			out = append(out, entry{rel: rel, member: members, skip: linkSkip(h.Typeflag)})
			continue
		}
		if h.Size > lim.MaxFileBytes {
			size := h.Size
			out = append(out, entry{rel: rel, member: members, open: func() ([]byte, error) {
				return nil, fmt.Errorf("file is %d MiB, more than the %d MiB limit", size>>20, lim.MaxFileBytes>>20)
			}})
			continue
		}
		total += h.Size
		if total > maxTotal {
			return stop(overTotal(maxTotal, lim, mem), true)
		}
		// h.Size is within the limits checked above: read exactly that. (io.ReadAll would keep
		// a 512-byte buffer for each of half a million empty members, and up to twice the size
		// of big ones.) A header that lies about its size costs one such buffer, then the
		// archive is reported cut.
		data := make([]byte, h.Size)
		n, err := io.ReadFull(tr, data)
		unpacked += int64(n)
		if err != nil {
			return stop(fmt.Errorf("reading %s: %w", rel, err), false)
		}
		out = append(out, entry{rel: rel, member: members, data: data})
	}
	// What the members hold is charged until each is read (see loader.file).
	mem.keep(total)
	return sortEntries(out), nil
}

// overTotal says which limit an archive's contents went over.
func overTotal(maxTotal int64, lim Limits, mem *budget) error {
	if maxTotal < lim.MaxTotalBytes {
		return fmt.Errorf("it unpacks to more than %s, half the memory budget of %s (raise it with %s)", mib(maxTotal), mib(mem.max), MemoryEnv)
	}
	return fmt.Errorf("it unpacks to more than %s (the limit on a bundle)", mib(maxTotal))
}

// linkSkip says why a link or device member is not read; one string per type, not per member.
func linkSkip(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "archive entry of type symbolic link, not read"
	case tar.TypeLink:
		return "archive entry of type hard link, not read"
	case tar.TypeChar, tar.TypeBlock:
		return "archive entry of type device, not read"
	case tar.TypeFifo:
		return "archive entry of type FIFO, not read"
	}
	return fmt.Sprintf("archive entry of type %q (link or device), not read", t)
}

// shortName cuts a hostile member name for messages.
func shortName(n string) string {
	if len(n) <= 200 {
		return n
	}
	return fmt.Sprintf("%s…(%d bytes)", strings.ToValidUTF8(n[:120], ""), len(n))
}

// sortEntries orders entries by path and reports paths that occur more than once in an
// archive: the later member is read, as tar would leave it on disk, so that the same archive
// always gives the same findings whatever order the members were read in.
func sortEntries(out []entry) []entry {
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].rel != out[j].rel {
			return out[i].rel < out[j].rel
		}
		return out[i].member < out[j].member
	})
	kept := out[:0]
	for i, e := range out {
		if i+1 < len(out) && out[i+1].rel == e.rel && !e.outside && !out[i+1].outside && e.member > 0 {
			later := out[i+1].member
			kept = append(kept, entry{rel: e.rel, open: func() ([]byte, error) {
				return nil, fmt.Errorf("the archive holds this path twice (members %d and %d); member %d was read, member %d ignored, as tar would extract them", e.member, later, later, e.member)
			}})
			continue
		}
		kept = append(kept, e)
	}
	return kept
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func fileSize(f *os.File) int64 {
	if fi, err := f.Stat(); err == nil {
		return fi.Size()
	}
	return 0
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
	jobs := make(chan int)
	var wg sync.WaitGroup
	var done int
	var mu sync.Mutex
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				l.file(es[i], single)
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
	var err error
	for i := range es {
		if err = ctx.Err(); err != nil {
			break
		}
		jobs <- i
	}
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
	if l.full.Load() != nil {
		l.notRead.Add(1)
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
		// Splitting a log into lines holds about twice its size for a moment.
		cost := 2 * int64(len(data))
		if !l.mem.reserve(cost) {
			l.b.Error(finding.ScanError{Cluster: displayCluster(cluster), File: e.rel, Message: fmt.Sprintf(
				"not read: reading this %s log needs about %s, more than is left of the memory budget of %s (raise it with %s)",
				mib(int64(len(data))), mib(cost), mib(l.mem.max), MemoryEnv)})
			return
		}
		defer l.mem.release(cost)
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

// fileDocs is what one file's documents came to: objects added, and the documents that were
// not turned into objects, recorded only once the file is known to be YAML or JSON.
type fileDocs struct {
	cluster string
	objects int
	skips   []snapshot.Skipped
	stopped bool // a limit was reached: the rest of the file is not read
}

func (f *fileDocs) skip(rel string, line int, item, reason string) {
	if item != "" {
		reason = item + ": " + reason
	}
	f.skips = append(f.skips, snapshot.Skipped{File: rel, Line: line, Reason: reason})
}

// objects reads every object of one file.
func (l *loader) objects(cluster, rel string, data []byte) {
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
	defer l.mem.release(cost)
	f := fileDocs{cluster: cluster}
	var parseErr *finding.ScanError
	if t[0] == '{' || t[0] == '[' {
		parseErr = l.jsonStream(cluster, rel, data, &f)
	} else {
		parseErr = l.yamlDocs(cluster, rel, data, &f)
	}
	if parseErr != nil && !strict && f.objects == 0 {
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
}

func (l *loader) jsonStream(cluster, rel string, data []byte, f *fileDocs) *finding.ScanError {
	if apiVersion, kind, ok := listItemKind(data); ok {
		room, why, whole := l.room(f, len(data))
		objs, ok, more := snapshot.PrepareList(apiVersion, kind, data, room)
		line := lineAt(data, int64(leadingSpace(data)))
		if ok && (len(objs) > 0 || more) && l.admitAll(f, len(objs), len(data)) {
			src := fmt.Sprintf("%s:%d", rel, line)
			for i, o := range objs {
				l.b.Add(cluster, fmt.Sprintf("%s items[%d]", src, i), o)
			}
			f.objects += len(objs)
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
		j, err := yaml.YAMLToJSON(d.body)
		if err != nil {
			line := d.line
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				n, _ := strconv.Atoi(m[1])
				line = d.line + n - 1
			}
			msg := yamlLine.ReplaceAllString(err.Error(), "line "+strconv.Itoa(line))
			return &finding.ScanError{File: rel, Line: line, Message: "invalid YAML: " + strings.TrimPrefix(msg, "error converting YAML to JSON: ")}
		}
		l.object(cluster, rel, d.line+leadingBlank(d.body), "", j, f)
		if f.stopped {
			break
		}
	}
	return nil
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

// object adds one JSON document found at rel:line (item names it inside a List: items[3]),
// expanding Lists. A document it does not turn into an object is recorded in f with the reason.
func (l *loader) object(cluster, rel string, line int, item string, raw []byte, f *fileDocs) {
	var h snapshot.Header
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
			l.object(cluster, rel, line, fmt.Sprintf("%sitems[%d]", dotted(item), i), it, f)
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

// room is how many more objects one List of file f may decode at once, and what the limit is
// that stops it there (whole: a limit of the whole bundle).
func (l *loader) room(f *fileDocs, size int) (n int, why string, whole bool) {
	n, why = l.lim.MaxObjectsPerFile-f.objects, perFileLimit(l.lim)
	if left := l.lim.MaxObjects - int(l.decoded.Load()); left < n {
		n, why, whole = left, totalLimit(l.lim), true
	}
	if left := int((l.mem.left() - int64(size)) / objectOverhead); left < n {
		n, why, whole = left, memoryLimit(l.mem), true
	}
	return max(n, 0), why, whole
}

func perFileLimit(lim Limits) string {
	return fmt.Sprintf("more than %d objects in one file (the limit per file); the rest of this file was not read", lim.MaxObjectsPerFile)
}

func totalLimit(lim Limits) string {
	return fmt.Sprintf("the bundle holds more than %d objects (the limit); reading stopped here", lim.MaxObjects)
}

func memoryLimit(mem *budget) string {
	return fmt.Sprintf("the objects read so far fill the memory budget of %s (raise it with %s); reading stopped here", mib(mem.max), MemoryEnv)
}

// admit charges one object of size bytes about to be added at rel:line; false, with the reason
// recorded, when a limit is reached: the rest of the file (a limit of one file) or of the
// bundle (a limit of the whole) is not read.
func (l *loader) admit(f *fileDocs, rel string, line int, item string, size int) bool {
	if f.stopped {
		return false
	}
	switch {
	case f.objects >= l.lim.MaxObjectsPerFile:
		l.stop(f, rel, line, item, perFileLimit(l.lim), false)
	case l.decoded.Add(1) > int64(l.lim.MaxObjects):
		l.stop(f, rel, line, item, totalLimit(l.lim), true)
	case !l.mem.keep(objectOverhead + int64(size)):
		l.stop(f, rel, line, item, memoryLimit(l.mem), true)
	default:
		return true
	}
	return false
}

// stop ends the reading of file f at rel:line (item), for why: the file's own limit is an
// error on the file; a limit of the whole bundle is reported once, with the count of files
// it left unread.
func (l *loader) stop(f *fileDocs, rel string, line int, item, why string, whole bool) {
	f.stopped = true
	e := finding.ScanError{Cluster: displayCluster(f.cluster), File: rel, Line: line, Message: withItem(item, why)}
	if !whole {
		l.b.Error(e)
		return
	}
	if !l.full.CompareAndSwap(nil, &e) {
		l.notRead.Add(1) // another file stopped at the same limit: counted, named once
	}
}

// admitAll admits n objects decoded at once from a size-byte List, or none.
func (l *loader) admitAll(f *fileDocs, n, size int) bool {
	if f.objects+n > l.lim.MaxObjectsPerFile || l.decoded.Add(int64(n)) > int64(l.lim.MaxObjects) {
		l.decoded.Add(-int64(n))
		return false
	}
	if !l.mem.keep(int64(n)*objectOverhead + int64(size)) {
		l.decoded.Add(-int64(n))
		return false
	}
	return true
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

// tailLines keeps the last MaxLogLines lines, each cut at MaxLineBytes, with credentials
// redacted (internal/redact): no report, bundle or dashboard ever quotes a token from a log.
func tailLines(data []byte, lim Limits) []string {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > lim.MaxLogLines {
		lines = lines[len(lines)-lim.MaxLogLines:]
	}
	for i, ln := range lines {
		ln = strings.TrimRight(ln, "\r")
		// Redact only what is kept, and a margin past the cut so that a credential across it
		// is still seen whole: redacting a 100 MB line would take a minute.
		long := len(ln) > lim.MaxLineBytes
		if long {
			ln = ln[:min(len(ln), lim.MaxLineBytes+redactMargin)]
		}
		ln = redactpkg.Line(ln)
		if long || len(ln) > lim.MaxLineBytes {
			ln = ln[:min(len(ln), lim.MaxLineBytes)] + " …[cut]"
		}
		lines[i] = ln
	}
	return lines
}

// redactMargin is how much of a cut log line past the cut is still redacted.
const redactMargin = 4 << 10
