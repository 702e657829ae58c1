package report

import (
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// evidenceFile is the bundle file an evidence source names, when it names one.
type evidenceFile struct {
	Path string // slash-separated, relative to the bundle root
	Line int    // 0 when unknown
}

// The loaders write sources as "FILE:LINE", "FILE:LINE items[N]" (an item of a List) or
// "FILE (N matching lines)" (a log); live scans write "live CONTEXT …", events "event REASON …",
// and an object without a file its ref "Kind/namespace/name".
var (
	sourceSuffix = lazyre.New(`(?: items\[\d+\])?(?: \(\d+ matching lines?\))?$`)
	sourceLineNo = lazyre.New(`^(.+):(\d+)$`)
	kindRef      = lazyre.New(`^[A-Z][A-Za-z0-9]*/`)
)

// fileOf reports the bundle file an evidence source names.
func fileOf(source string) (evidenceFile, bool) {
	s := sourceSuffix().ReplaceAllString(source, "")
	line := 0
	if m := sourceLineNo().FindStringSubmatch(s); m != nil {
		s = m[1]
		line, _ = strconv.Atoi(m[2])
	}
	switch {
	case s == "" || strings.ContainsAny(s, " \t\n") || strings.Contains(s, "://"):
		return evidenceFile{}, false
	case path.IsAbs(s) || strings.HasPrefix(s, "../"):
		return evidenceFile{}, false
	case kindRef().MatchString(s) && line == 0 && path.Ext(s) == "":
		return evidenceFile{}, false // an object ref, not a file
	case line == 0 && path.Ext(s) == "" && !strings.Contains(s, "/"):
		return evidenceFile{}, false // a bare word such as a cluster name or "signature"
	}
	return evidenceFile{Path: s, Line: line}, true
}

// uri escapes each segment of a relative path for use as a URI reference.
func (f evidenceFile) uri() string {
	segs := strings.Split(f.Path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
