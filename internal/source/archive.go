package source

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

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
			out = append(out, entry{rel: rel, member: int32(members), skip: linkSkip(h.Typeflag)})
			continue
		}
		if h.Size > lim.MaxFileBytes {
			size := h.Size
			out = append(out, entry{rel: rel, member: int32(members), open: func(*[]byte) ([]byte, error) {
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
		out = append(out, entry{rel: rel, member: int32(members), data: data})
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
			kept = append(kept, entry{rel: e.rel, open: func(*[]byte) ([]byte, error) {
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
