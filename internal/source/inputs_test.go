package source

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadSingleFile: the first thing a newcomer tries, `kubectl get pods -A -o yaml > pods.yaml`
// then `--from pods.yaml`, is a bundle of one file, named after it.
func TestLoadSingleFile(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"pods.yaml": goodPod,
		"pods.YML":  goodPod,
		"pods.json": `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fleet-agent-7d9c5b6f4-q8w2n","namespace":"cattle-fleet-system"}}]}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := (&Offline{Path: p}).Load(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c := onlyCluster(t, s)
		if c.Name != "pods" || len(c.Pods) != 1 || len(s.Errors) != 0 {
			t.Errorf("%s: want cluster pods with its one Pod:\n%s", name, describeSnap(s))
		}
		if src := c.Source("Pod", "cattle-fleet-system", "fleet-agent-7d9c5b6f4-q8w2n"); !strings.HasPrefix(src, name) {
			t.Errorf("%s: the Pod's source is %q, want the file", name, src)
		}
	}
}

// TestLoadRefusesOtherFileTypes: a zip, a plain tar or any other file says what is accepted.
func TestLoadRefusesOtherFileTypes(t *testing.T) {
	dir := t.TempDir()
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	w, _ := zw.Create("bundle/pods.yaml")
	w.Write([]byte(goodPod))
	zw.Close()
	var tarred bytes.Buffer
	tw := tar.NewWriter(&tarred)
	tw.WriteHeader(&tar.Header{Name: "bundle/pods.yaml", Mode: 0o644, Size: int64(len(goodPod)), Typeflag: tar.TypeReg})
	tw.Write([]byte(goodPod))
	tw.Close()
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"support.zip", zipped.Bytes(), "is a zip archive"},
		{"support", zipped.Bytes(), "is a zip archive"}, // by its content, whatever its name
		{"support.tar", tarred.Bytes(), "is a plain tar archive"},
		{"support.bundle", tarred.Bytes(), "is a plain tar archive"},
		{"notes.txt", []byte("kubectl get pods was run at 10:02\n"), "neither a directory nor a .tar.gz archive"},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := (&Offline{Path: p}).Load(context.Background())
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) ||
			!strings.Contains(err.Error(), "a directory, a .tar.gz/.tgz archive, or a single .yaml/.yml/.json file") {
			t.Errorf("%s: want an error naming it, saying %q and what is accepted; got %v", c.name, c.want, err)
		}
	}
}

// TestLoadTruncatedArchiveSaysHowFar: an archive cut inside a member is an error in the
// snapshot naming the archive, how many entries were read and the last one.
func TestLoadTruncatedArchiveSaysHowFar(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cut.tar.gz")
	ts := newTarStream(t, p, 1)
	ts.add(t, &tar.Header{Name: "clusters/prod-eu-1/pods.yaml", Size: int64(len(goodPod))}, strings.NewReader(goodPod))
	big := strings.Repeat("# filler line of a big file\n", 20000)
	ts.add(t, &tar.Header{Name: "clusters/prod-us-1/pods.yaml", Size: int64(len(big))}, strings.NewReader(big))
	ts.close(t)
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, b[:len(b)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := (&Offline{Path: p}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, s, "cut.tar.gz", 0, "archive is truncated or corrupt after 2 entries", "last member read clusters/prod-us-1/pods.yaml", "the rest was not")
	if c := s.Cluster("prod-eu-1"); c == nil || len(c.Pods) != 1 {
		t.Errorf("the member before the cut loads:\n%s", describeSnap(s))
	}
}

// TestLoadDirectoryCountsEveryEntry: in a directory bundle too, links and directories count
// toward the file limit.
func TestLoadDirectoryCountsEveryEntry(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"pods.yaml": goodPod})
	for i := 0; i < 10; i++ {
		if err := os.Symlink("pods.yaml", filepath.Join(dir, "link"+string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	lim := DefaultLimits
	lim.MaxFiles = 5
	_, err := (&Offline{Path: dir, Limits: lim}).Load(context.Background())
	if err == nil || !strings.Contains(err.Error(), "more than 5 files (entries of every type count)") {
		t.Errorf("want the directory refused over the file limit, got %v", err)
	}
}
