package source

import (
	"bytes"
	"encoding/json"
	"path"
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// `fleet dump` (rancher/fleet, internal/cmd/cli/dump) writes the Events of each namespace it
// looks at to a file events_<namespace>: one json.Marshal'ed core/v1 Event a line, lines
// joined by "\n". The Events come from a typed EventList, whose items carry no apiVersion and
// no kind, so each line is read as a v1 Event when it has an Event's fields.
var fleetDumpEventsName = lazyre.New(`^events_[a-z0-9][-a-z0-9]*$`)

// isFleetDumpEvents reports whether rel and its trimmed content t are a fleet dump events file.
func isFleetDumpEvents(rel string, t []byte) bool {
	base := path.Base(rel)
	return strings.HasPrefix(base, "events_") && fleetDumpEventsName().MatchString(base) && len(t) > 0 && t[0] == '{'
}

// fleetDumpEvents reads a fleet dump events file line by line: a line that is not JSON, or
// not an Event, is a skip named by its line, and the lines after it are still read.
func (l *loader) fleetDumpEvents(cluster, rel string, data []byte, f *fileDocs) {
	for i, ln := range bytes.Split(data, []byte("\n")) {
		if f.stopped {
			return
		}
		ln = bytes.TrimSpace(ln)
		if len(ln) == 0 {
			continue
		}
		l.fleetDumpEvent(cluster, rel, i+1, ln, f)
	}
}

func (l *loader) fleetDumpEvent(cluster, rel string, line int, raw []byte, f *fileDocs) {
	if !json.Valid(raw) {
		f.skip(rel, line, "", "not a JSON document (a fleet dump events file holds one Event a line)")
		return
	}
	if hasEventFields(raw) {
		// the List header gives the line its apiVersion and kind
		h := snapshot.Header{APIVersion: "v1", Kind: "EventList"}
		l.objectOf(cluster, rel, line, "", raw, f, &h)
		return
	}
	l.object(cluster, rel, line, "", raw, f)
}

// hasEventFields reports a JSON mapping with no kind of its own and an Event's involvedObject
// and reason.
func hasEventFields(raw []byte) bool {
	var e struct {
		Kind           *string          `json:"kind"`
		InvolvedObject *json.RawMessage `json:"involvedObject"`
		Reason         *string          `json:"reason"`
	}
	if json.Unmarshal(raw, &e) != nil || e.Kind != nil && *e.Kind != "" {
		return false
	}
	return e.InvolvedObject != nil && bytes.HasPrefix(bytes.TrimSpace(*e.InvolvedObject), []byte("{")) && e.Reason != nil
}
