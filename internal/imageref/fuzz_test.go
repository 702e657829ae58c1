package imageref_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/suc"
)

// validTag is the tag grammar of distribution/reference.
var validTag = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)

// FuzzParse runs image references through Parse and the version parsing built on their tags
// (suc.ParseKubectlTag, what SUC's drain-flag checks read from the kubectl image) and
// suc.WithLatestTag (SUC's own tag completion).
func FuzzParse(f *testing.F) {
	digest := "sha256:" + strings.Repeat("9f", 32)
	for _, s := range []struct{ ref, version string }{
		{"rancher/kubectl:v1.30.3", "v1.31.4+rke2r1"},
		{"rancher/rke2-upgrade", "v1.31.4-rke2r1"},
		{"registry.example.com:5000/rancher/system-upgrade-controller:v0.20.1", "v0.20.1"},
		{"docker.io/library/busybox:latest", "1.18.3"},
		{"ghcr.io/org/img:latest@" + digest, "v1.20"},
		{"[fd00::1]:5000/ops/os-upgrade@" + digest, "latest"},
		{"index.docker.io/rancher/fleet-agent:v0.16.0", "v1.30.3-rancher1"},
		{"Rancher/Kubectl:V1", "v2.0.0"},
		{"localhost:5000", "v1.99999999999999999999.1"},
		{"  rancher/kubectl@sha256:abc  ", ""},
	} {
		f.Add(s.ref, s.version)
	}
	f.Fuzz(func(t *testing.T, ref, version string) {
		r, err := imageref.Parse(ref)
		if r.Original != ref {
			t.Fatalf("Original = %q, want %q", r.Original, ref)
		}
		if err == nil {
			if r.Registry == "" || r.Repository == "" {
				t.Fatalf("Parse(%q) = %+v: empty registry or repository", ref, r)
			}
			// the canonical form names the same image
			again, err := imageref.Parse(r.String())
			if err != nil {
				t.Fatalf("canonical form %q of %q does not parse: %v", r.String(), ref, err)
			}
			if again.Name() != r.Name() || again.Tag != r.Tag || again.Digest != r.Digest {
				t.Fatalf("canonical form %q of %q parses to %q", r.String(), ref, again.String())
			}
			// and so does the short form a user writes — except where distribution's own
			// familiar form is ambiguous: docker.io/foo.bar/x shortens to foo.bar/x, which a
			// runtime reads as registry foo.bar (SUC writes it so, and so does Familiar)
			first, _, _ := strings.Cut(r.Repository, "/")
			ambiguous := r.Registry == imageref.DefaultRegistry && strings.Contains(r.Repository, "/") &&
				(strings.ContainsAny(first, ".:") || first == "localhost")
			if !ambiguous {
				fam, err := imageref.Parse(r.Familiar())
				if err != nil {
					t.Fatalf("familiar form %q of %q does not parse: %v", r.Familiar(), ref, err)
				}
				if fam.String() != r.String() {
					t.Fatalf("familiar form %q of %q names %q, not %q", r.Familiar(), ref, fam.String(), r.String())
				}
			}
			if r.NameOnly() && !r.Floating() {
				t.Fatalf("%q has neither tag nor digest but does not float", ref)
			}
			// SUC completes a name-only image with the Plan's version; anything else is kept
			if got := suc.WithLatestTag(ref, version); version == "" || !r.NameOnly() {
				if got != ref {
					t.Fatalf("WithLatestTag(%q, %q) = %q, want it unchanged", ref, version, got)
				}
			} else if c, cerr := imageref.Parse(got); cerr == nil && validTag.MatchString(version) && !ambiguous && (c.Name() != r.Name() || c.Tag != version) {
				t.Fatalf("WithLatestTag(%q, %q) = %q names another image", ref, version, got)
			}
		} else {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("empty error")
			}
			if strings.TrimSpace(ref) != "" && !strings.Contains(err.Error(), strconv.Quote(strings.TrimSpace(ref))) {
				t.Errorf("error %q does not name the reference %q", err, ref)
			}
		}

		for _, tag := range []string{version, r.Tag} {
			v, ok := suc.ParseKubectlTag(tag)
			if ok && v.Major != 1 {
				t.Fatalf("ParseKubectlTag(%q) = %v accepted with major %d", tag, v, v.Major)
			}
			if ok {
				back, bok := suc.ParseKubectlTag(v.String())
				if !bok || back.Major != v.Major || back.Minor != v.Minor || back.Patch != v.Patch {
					t.Fatalf("ParseKubectlTag(%q) = %v does not read its own String back: %v %v", tag, v, back, bok)
				}
			}
		}
		if suc.IsKubernetesVersion(version) {
			if _, ok := suc.ParseKubectlTag(version); !ok {
				t.Errorf("%q is a Kubernetes version but not a kubectl tag", version)
			}
		}
	})
}
