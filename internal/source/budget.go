package source

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/unstick-dev/unstick/internal/finding"
)

// MemoryEnv names the environment variable that sets the loader's memory budget
// (Limits.MaxMemory), in bytes or with a unit: 512MiB, 2GiB, 800M.
const MemoryEnv = "UNSTICK_MAX_MEMORY"

// DefaultMaxMemory is the loader's memory budget when neither the caller nor MemoryEnv sets one.
const DefaultMaxMemory = 1 << 30

// Estimated in-memory cost of what the loader keeps, per item, on top of its bytes. Measured
// with runtime.MemStats on typical objects; generous, so that the budget holds.
const (
	entryOverhead  = 256  // an archive member held until it is read: header, name, slice
	objectOverhead = 2048 // one decoded object: its typed struct, index entries, source
	yamlParseCost  = 16   // parsing YAML holds about this many times the file's size at once
	jsonParseCost  = 4    // decoding JSON into types holds about this many times its size
)

// ParseMemory reads a memory size: a number of bytes, or one with a unit (K, M, G, KiB, MiB,
// GiB; decimal units are taken as binary, as Kubernetes' quantities are not).
func ParseMemory(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("memory size %q: want a positive number of bytes, or one with a unit such as 512MiB or 2GiB", s)
	}
	return n * mult, nil
}

// maxMemory is the budget to use: the limits', else MemoryEnv's, else the default.
func maxMemory(lim Limits) (int64, error) {
	if lim.MaxMemory > 0 {
		return lim.MaxMemory, nil
	}
	if v := os.Getenv(MemoryEnv); v != "" {
		n, err := ParseMemory(v)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", MemoryEnv, err)
		}
		return n, nil
	}
	return DefaultMaxMemory, nil
}

// budget accounts what the loader holds against its memory budget: what stays (archive
// members not yet read, decoded objects) and what a file being parsed needs for a moment.
// Accounting, not measuring: the costs above are estimates, kept on the safe side.
type budget struct {
	mu       sync.Mutex
	cond     *sync.Cond
	max      int64
	kept     int64 // held until the end (objects) or until read (archive members)
	inFlight int64 // reserved by files being parsed
}

func newBudget(max int64) *budget {
	b := &budget{max: max}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// keep charges n bytes that stay; false when that goes over the budget (nothing is charged).
func (b *budget) keep(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.kept+n > b.max {
		return false
	}
	b.kept += n
	return true
}

// left is what keep may still charge.
func (b *budget) left() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.max - b.kept
}

// free gives back n bytes charged by keep.
func (b *budget) free(n int64) {
	b.mu.Lock()
	b.kept -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// reserve waits until n bytes fit beside what is kept and what other files reserved; false
// when they cannot fit even alone.
func (b *budget) reserve(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if b.kept+n > b.max && b.inFlight == 0 {
			return false
		}
		if b.kept+b.inFlight+n <= b.max {
			b.inFlight += n
			return true
		}
		b.cond.Wait()
	}
}

// release gives back a reservation.
func (b *budget) release(n int64) {
	b.mu.Lock()
	b.inFlight -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", (n+1023)>>10)
	}
	return fmt.Sprintf("%d MiB", (n+(1<<20)-1)>>20)
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
