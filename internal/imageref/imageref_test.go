package imageref

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0f", 32)
	for _, c := range []struct {
		in, canonical, familiar string
		floating                bool
	}{
		{"rancher/kubectl:v1.30.3", "docker.io/rancher/kubectl:v1.30.3", "rancher/kubectl:v1.30.3", false},
		{"busybox", "docker.io/library/busybox", "busybox", true},
		{"index.docker.io/library/busybox:latest", "docker.io/library/busybox:latest", "busybox:latest", true},
		{"127.0.0.1:5000/rancher/kubectl:v1.29.9", "127.0.0.1:5000/rancher/kubectl:v1.29.9", "127.0.0.1:5000/rancher/kubectl:v1.29.9", false},
		{"localhost/app:stable", "localhost/app:stable", "localhost/app:stable", true},
		{"registry.example.com/ops/os-upgrade@" + digest, "registry.example.com/ops/os-upgrade@" + digest, "registry.example.com/ops/os-upgrade@" + digest, false},
		{"ghcr.io/org/img:latest@" + digest, "ghcr.io/org/img:latest@" + digest, "ghcr.io/org/img:latest@" + digest, false},
	} {
		r, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if r.String() != c.canonical || r.Familiar() != c.familiar || r.Floating() != c.floating {
			t.Errorf("Parse(%q) = %s / %s floating=%v; want %s / %s floating=%v", c.in, r, r.Familiar(), r.Floating(), c.canonical, c.familiar, c.floating)
		}
	}
	for _, bad := range []string{"", "Rancher/Kubectl:v1", "rancher/kubectl:", "rancher/kubectl@sha256:xyz", "a/b:" + strings.Repeat("x", 200)} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) should fail", bad)
		}
	}
}

func TestSupports(t *testing.T) {
	f := Facts{Status: OK, Platforms: []Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}}}
	if ok, known := f.Supports("linux", "arm64"); !ok || !known {
		t.Error("arm64 (any variant) is supported")
	}
	if ok, known := f.Supports("windows", "amd64"); ok || !known {
		t.Error("windows/amd64 is not")
	}
	if _, known := (Facts{Status: Missing}).Supports("linux", "amd64"); known {
		t.Error("a missing image has no known platforms")
	}
	if _, known := (Facts{Status: OK}).Supports("linux", "amd64"); known {
		t.Error("platforms that could not be read are unknown")
	}
}
