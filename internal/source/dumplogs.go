package source

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// `kubectl cluster-info dump --output-directory DIR` writes each pod's logs to
// DIR/<namespace>/<pod>/logs.txt: every container's current log between two marker lines
// (kubectl's clusterinfo_dump.go), or, when the log could not be read, kubectl's error line
// in its place. The objects beside it are typed Lists (PodList, EventList) that the document
// reader takes as they are.
var (
	dumpLogPath  = lazyre.New(`(?:^|/)logs\.txt$`) // the markers name the pod
	dumpLogStart = lazyre.New(`^==== START logs for container (\S+) of pod ([^/\s]+)/(\S+) ====$`)
	dumpLogError = lazyre.New(`^(Request log error|Create log request error): `)
)

const dumpLogMarker = "==== START logs for container "

// dumpLog is one container's part of a cluster-info dump's logs.txt.
type dumpLog struct {
	namespace, pod, container string
	line                      int // of the START marker, 1-based
	body                      []byte
	// unread is kubectl's error line when it could not read the log.
	unread string
}

// isDumpLog reports whether rel and data are a logs.txt written by kubectl cluster-info dump.
func isDumpLog(rel string, data []byte) bool {
	return bytes.HasPrefix(data, []byte(dumpLogMarker)) && dumpLogPath().MatchString(rel)
}

// splitDumpLog cuts a cluster-info dump's logs.txt into its containers' logs. A block whose
// END marker is missing (a truncated file) runs to the end of the file.
func splitDumpLog(data []byte) []dumpLog {
	var out []dumpLog
	var cur *dumpLog
	var end string
	flush := func() {
		if cur == nil {
			return
		}
		body := strings.TrimRight(string(cur.body), "\n")
		if !strings.Contains(body, "\n") && dumpLogError().MatchString(body) {
			cur.unread, cur.body = body, nil
		}
		out = append(out, *cur)
		cur = nil
	}
	for i, ln := range bytes.SplitAfter(data, []byte("\n")) {
		text := strings.TrimRight(string(ln), "\r\n")
		if m := dumpLogStart().FindStringSubmatch(text); m != nil {
			flush()
			cur = &dumpLog{container: m[1], namespace: m[2], pod: m[3], line: i + 1}
			end = fmt.Sprintf("==== END logs for container %s of pod %s/%s ====", m[1], m[2], m[3])
			continue
		}
		if cur == nil {
			continue
		}
		if text == end {
			flush()
			continue
		}
		cur.body = append(cur.body, ln...)
	}
	flush()
	return out
}

// hasDumpLogs reports whether an object file holds log blocks between its documents: what
// `kubectl cluster-info dump` prints when it writes to its standard output instead of a
// directory (`kubectl cluster-info dump > dump.json`).
func hasDumpLogs(data []byte) bool {
	return bytes.HasPrefix(data, []byte(dumpLogMarker)) || bytes.Contains(data, []byte("\n"+dumpLogMarker))
}

// blankDumpLogs is data with every log block's lines, markers included, emptied, so that the
// documents around them parse, and keep their line numbers.
func blankDumpLogs(data []byte) []byte {
	out := make([]byte, 0, len(data))
	end := ""
	for _, ln := range bytes.SplitAfter(data, []byte("\n")) {
		text := strings.TrimRight(string(ln), "\r\n")
		if end == "" {
			if m := dumpLogStart().FindStringSubmatch(text); m != nil {
				end = fmt.Sprintf("==== END logs for container %s of pod %s/%s ====", m[1], m[2], m[3])
			}
		}
		if end == "" {
			out = append(out, ln...)
			continue
		}
		if text == end {
			end = ""
		}
		if bytes.HasSuffix(ln, []byte("\n")) {
			out = append(out, '\n')
		}
	}
	return out
}
