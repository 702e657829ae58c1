package source

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// fleetDumpFiles reads testdata/fleet-dump: files named and written as `fleet dump` writes
// them (rancher/fleet internal/cmd/cli/dump): flat names, Events one JSON object a line.
func fleetDumpFiles(t *testing.T) map[string]string {
	t.Helper()
	ents, err := os.ReadDir("testdata/fleet-dump")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("testdata/fleet-dump", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

func eventNames(c *snapshot.Cluster) []string {
	var out []string
	for _, e := range c.Events {
		out = append(out, e.Namespace+"/"+e.Name+" "+e.Reason+" "+e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name)
	}
	sort.Strings(out)
	return out
}

// A fleet dump archive's events_<namespace> files are read as Events: their lines carry no
// apiVersion or kind, and were skipped as "not a Kubernetes object".
func TestLoadFleetDumpEvents(t *testing.T) {
	file := filepath.Join(t.TempDir(), "fleet-dump.tgz")
	packTarGz(t, file, treeEntries(fleetDumpFiles(t), ""))
	s := load(t, file)
	if len(s.Errors) != 0 || len(s.Clusters) != 1 {
		t.Fatalf("want one cluster and no errors:\n%s", describeSnap(s))
	}
	c := s.Clusters[0]
	want := []string{
		"cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n.187c2a5e3b9d4f01 BackOff Pod/fleet-agent-7d9c5b6f4-q8w2n",
		"cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n.187c2a5e3ba01c77 Pulled Pod/fleet-agent-7d9c5b6f4-q8w2n",
		"cattle-fleet-system/fleet-controller-5b8d9c7f6-m4k2p.187c2a5e3c11aa02 Scheduled Pod/fleet-controller-5b8d9c7f6-m4k2p",
		"fleet-local/local.187c2a60d4e5f611 Ready Cluster/local",
	}
	if got := eventNames(c); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := c.Source("Event", "cattle-fleet-system", "fleet-agent-7d9c5b6f4-q8w2n.187c2a5e3ba01c77"); got != "events_cattle-fleet-system:2" {
		t.Errorf("the second line's Event is cited as %q, want events_cattle-fleet-system:2", got)
	}
	for _, e := range c.Events {
		if e.Reason == "BackOff" && (e.Count != 42 || e.LastTimestamp.IsZero() || e.Type != "Warning") {
			t.Errorf("BackOff event read without its count, time or type: %+v", e)
		}
	}
	if c.Get("Cluster", "fleet-local", "local") == nil {
		t.Errorf("the dump's Cluster is not loaded:\n%s", describeSnap(s))
	}
}

// A broken line of a fleet dump events file — cut short, or a mapping that is no Event — is
// a skip at its line; the Events before and after it load.
func TestLoadFleetDumpEventsBadLines(t *testing.T) {
	files := fleetDumpFiles(t)
	lines := strings.Split(files["events_cattle-fleet-system"], "\n")
	files["events_cattle-fleet-system"] = strings.Join([]string{
		lines[0],
		lines[1][:len(lines[1])/2], // cut short, as a truncated copy leaves it
		`{"level":"info","msg":"not an event"}`,
		lines[2],
	}, "\n") + "\n"
	dir := t.TempDir()
	writeTree(t, dir, files)
	s := load(t, dir)
	if len(s.Errors) != 0 {
		t.Errorf("a bad line is a skip, not an error on the file:\n%s", describeSnap(s))
	}
	wantSkippedAt(t, s, "events_cattle-fleet-system", 2, "not a JSON document")
	wantSkippedAt(t, s, "events_cattle-fleet-system", 3, "no apiVersion and kind")
	if n := len(s.Clusters[0].Events); n != 3 {
		t.Errorf("want the two good lines' Events and fleet-local's, got %d:\n%s", n, strings.Join(eventNames(s.Clusters[0]), "\n"))
	}
	if got := s.Clusters[0].Source("Event", "cattle-fleet-system", "fleet-controller-5b8d9c7f6-m4k2p.187c2a5e3c11aa02"); got != "events_cattle-fleet-system:4" {
		t.Errorf("the Event after the bad lines is cited as %q, want events_cattle-fleet-system:4", got)
	}
}

// Replaying a fleet dump into an API server gives its Events their apiVersion and kind.
func TestReadRawObjectsFleetDumpEvents(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, fleetDumpFiles(t))
	var events []string
	err := ReadRawObjects(dir, func(o RawObject) error {
		if o.Object["kind"] == "Event" && o.Object["apiVersion"] == "v1" {
			md, _ := o.Object["metadata"].(map[string]any)
			events = append(events, o.File+" "+md["name"].(string))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 {
		t.Errorf("want the 4 Events as v1 Event objects, got %q", events)
	}
}
