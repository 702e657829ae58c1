package helmrelease

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
)

// The records in testdata/records are release podinfo in namespace podinfo, revision 1
// deployed and revision 2 pending-upgrade, as each Helm writes them: helm4-* marshalled from
// Helm 4.2's own types (pkg/release/v1, pkg/chart/v2, pkg/chart/common), with apply_method
// "ssa" (helm install's default), the chart's modtime and schemamodtime and each chart
// file's modtime, zero times omitted; helm3-* marshalled from Helm 3.22's (pkg/release,
// pkg/chart), with "deleted":"" and no apply_method.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "records", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// stored is a record in Helm's stored form.
func stored(t *testing.T, record []byte) []byte {
	t.Helper()
	b, err := Encode(record)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// typed reads a record as Helm v3's storage driver does.
func typed(t *testing.T, record []byte) *release.Release {
	t.Helper()
	var r release.Release
	if err := json.Unmarshal(record, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// written is a release as Helm v3's storage driver writes it.
func written(t *testing.T, r *release.Release) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return stored(t, b)
}

// changedPaths lists the members (objects walked, dotted) whose JSON differs between a and b,
// including members only one of them has.
func changedPaths(t *testing.T, prefix string, a, b json.RawMessage) []string {
	t.Helper()
	am, aok := members(a)
	bm, bok := members(b)
	if !aok || !bok {
		if bytes.Equal(a, b) {
			return nil
		}
		return []string{strings.TrimSuffix(prefix, ".")}
	}
	av, bv := byKey(am), byKey(bm)
	var out []string
	for k, x := range av {
		y, ok := bv[k]
		if !ok {
			out = append(out, prefix+k)
			continue
		}
		out = append(out, changedPaths(t, prefix+k+".", x, y)...)
	}
	for k := range bv {
		if _, ok := av[k]; !ok {
			out = append(out, prefix+k)
		}
	}
	slices.Sort(out)
	return out
}

// A release record read, changed as each of fix's writes changes it, and written through Helm
// v3's type comes out with exactly the change: every other member, at every level, keeps its
// stored JSON, so a Helm 4 record keeps apply_method and the chart's modtimes, and a Helm 3
// record gains nothing (not even the fields Helm 4 would add).
func TestCarryChangesOnlyWhatTheWriteChanged(t *testing.T) {
	rollbackAt := helmtime.Time{Time: time.Date(2026, 11, 28, 9, 41, 7, 0, time.UTC)}
	for _, helm := range []string{"helm4", "helm3"} {
		v1, v2 := fixture(t, helm+"-podinfo.v1.json"), fixture(t, helm+"-podinfo.v2.json")
		for _, tc := range []struct {
			name   string
			from   []byte
			change func(cur, target *release.Release) *release.Release
			want   []string
		}{
			{"superseded by a rollback", v1, func(_, r *release.Release) *release.Release {
				r.Info.Status = release.StatusSuperseded
				return r
			}, []string{"info.status"}},
			{"marked failed", v2, func(r, _ *release.Release) *release.Release {
				r.SetStatus(release.StatusFailed, `Release unlocked from "pending-upgrade" state by unstick: no earlier revision to roll back to`)
				return r
			}, []string{"info.description", "info.status"}},
			{"manifest rewritten", v1, func(_, r *release.Release) *release.Release {
				r.Manifest = strings.Replace(r.Manifest, "apiVersion: apps/v1", "apiVersion: apps/v1 # rewritten", 1)
				return r
			}, []string{"manifest"}},
			{"a rollback's new revision, made from the target", v1, func(cur, target *release.Release) *release.Release {
				return &release.Release{Name: target.Name, Namespace: cur.Namespace, Chart: target.Chart, Config: target.Config,
					Info: &release.Info{FirstDeployed: cur.Info.FirstDeployed, LastDeployed: rollbackAt, Status: release.StatusDeployed,
						Notes: target.Info.Notes, Description: "Rollback to 1"},
					Version: cur.Version + 1, Manifest: target.Manifest, Hooks: target.Hooks}
			}, []string{"info.description", "info.last_deployed", "version"}},
		} {
			t.Run(helm+"/"+tc.name, func(t *testing.T) {
				want := tc.change(typed(t, v2), typed(t, v1))
				out, err := Carry(stored(t, tc.from), written(t, want))
				if err != nil {
					t.Fatal(err)
				}
				got, err := Payload(out)
				if err != nil {
					t.Fatal(err)
				}
				if paths := changedPaths(t, "", tc.from, got); !slices.Equal(paths, tc.want) {
					t.Errorf("changed members %v, want %v", paths, tc.want)
				}
				// Helm v3's type reads exactly the record the write meant.
				if a, b := mustJSON(t, typed(t, got)), mustJSON(t, want); !bytes.Equal(a, b) {
					t.Errorf("Helm v3 reads\n%s\nwant\n%s", a, b)
				}
				var m map[string]any
				if err := json.Unmarshal(got, &m); err != nil {
					t.Fatal(err)
				}
				if am, ok := m["apply_method"]; helm == "helm4" && am != "ssa" || helm == "helm3" && ok {
					t.Errorf("%s record: apply_method %v", helm, am)
				}
			})
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A write that changes nothing writes the stored record back byte for byte, Helm 4's included
// (Helm v3 alone would drop apply_method and the modtimes and add "deleted":"").
func TestCarryUnchangedIsByteForByte(t *testing.T) {
	for _, name := range []string{"helm4-podinfo.v1.json", "helm3-podinfo.v2.json"} {
		rec := fixture(t, name)
		out, err := Carry(stored(t, rec), written(t, typed(t, rec)))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := Payload(out); !bytes.Equal(got, rec) {
			t.Errorf("%s: written back as\n%s\nwant\n%s", name, got, rec)
		}
	}
	if v3 := mustJSON(t, typed(t, fixture(t, "helm4-podinfo.v1.json"))); bytes.Contains(v3, []byte("apply_method")) || bytes.Contains(v3, []byte("modtime")) {
		t.Fatal("Helm v3's type keeps Helm 4's fields: this test no longer shows what Carry keeps")
	}
}

// Helm v3 reads JSON numbers as float64: a value beyond 2^53 in the user's values comes out
// rounded. Carry keeps the stored value where the write did not change it.
func TestCarryKeepsNumbersHelmV3Rounds(t *testing.T) {
	rec := []byte(`{"name":"ledger","info":{"status":"pending-upgrade"},"config":{"maxOffset":9007199254740993,"ratio":0.10000000000000000555},"version":4,"namespace":"ledger"}`)
	r := typed(t, rec)
	r.Info.Status = release.StatusSuperseded
	if !bytes.Contains(mustJSON(t, r), []byte("9007199254740992")) {
		t.Fatal("Helm v3's type no longer rounds the number: this test shows nothing")
	}
	out, err := Carry(stored(t, rec), written(t, r))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := Payload(out)
	if want := `{"name":"ledger","info":{"status":"superseded"},"config":{"maxOffset":9007199254740993,"ratio":0.10000000000000000555},"version":4,"namespace":"ledger"}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A record in which the name Helm reads is not the one unstick would change (a second
// "Manifest", which encoding/json matches case-insensitively and reads last) is refused:
// written with the change laid over it, Helm would still read the old manifest.
func TestCarryRefusesARecordHelmWouldReadOtherwise(t *testing.T) {
	rec := []byte(`{"name":"web","info":{"status":"deployed"},"manifest":"kind: ConfigMap\n","Manifest":"kind: Secret\n","version":2,"namespace":"web"}`)
	r := typed(t, rec)
	r.Manifest = "kind: ConfigMap # rewritten\n"
	if _, err := Carry(stored(t, rec), written(t, r)); err == nil || !strings.Contains(err.Error(), "cannot keep") {
		t.Errorf("Carry: %v, want a refusal", err)
	}
}

// FuzzCarry lays a status change over arbitrary stored records: Carry never panics, and what it
// returns reads, through Helm v3's type, exactly as the record written.
func FuzzCarry(f *testing.F) {
	for _, name := range []string{"helm4-podinfo.v1.json", "helm3-podinfo.v2.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "records", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"name":"a","info":{"status":"deployed","x":{"y":[1,2]}},"version":1,"info":null}`))
	f.Add([]byte(`{"Name":"a","name":"b","INFO":{"status":"failed"},"version":1e3}`))
	f.Fuzz(func(t *testing.T, rec []byte) {
		var r release.Release
		if json.Unmarshal(rec, &r) != nil || r.Info == nil {
			return
		}
		r.Info.Status = release.StatusSuperseded
		next, err := json.Marshal(&r)
		if err != nil {
			return
		}
		from, err := Encode(rec)
		if err != nil {
			t.Fatal(err)
		}
		to, err := Encode(next)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Carry(from, to)
		if err != nil {
			return
		}
		got, err := Payload(out)
		if err != nil {
			t.Fatal(err)
		}
		var back release.Release
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("Carry wrote a record Helm v3 cannot read: %v", err)
		}
		if again, _ := json.Marshal(&back); !bytes.Equal(again, next) {
			t.Fatalf("Helm v3 reads\n%s\nwant\n%s", again, next)
		}
	})
}
