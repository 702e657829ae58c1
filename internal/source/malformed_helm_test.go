package source

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
)

// A Helm release Secret in tenant-a whose record says kube-system (and one whose labels name
// another release than its name) is reported as malformed, naming the Secret, and left out of
// the snapshot's releases: nothing judges, plans or prints a command for it. A well-formed
// release beside it is read as usual.
func TestMalformedHelmRecordIsReportedAndLeftOut(t *testing.T) {
	record := func(name, ns string, rev int) []byte {
		raw := `{"name":"` + name + `","namespace":"` + ns + `","version":` + string(rune('0'+rev)) + `,"info":{"status":"pending-install","last_deployed":"2026-11-28T08:00:00Z"}}`
		return []byte(base64.StdEncoding.EncodeToString(gzBytes([]byte(raw))))
	}
	dir := t.TempDir()
	relabelled := strings.Replace(helmSecretYAML("web", "tenant-a", "deployed", 1, record("web", "tenant-a", 1)), "name: web\n", "name: billing\n", 1)
	writeTree(t, dir, map[string]string{
		"tenant-a/misplaced.yaml":  helmSecretYAML("sidecar", "tenant-a", "pending-install", 1, record("sidecar", "kube-system", 1)),
		"tenant-a/relabelled.yaml": relabelled,
		"tenant-a/good.yaml":       helmSecretYAML("app", "tenant-a", "pending-install", 2, record("app", "tenant-a", 2)),
	})
	s, err := (&Offline{Path: dir}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := s.Clusters[0]
	if len(c.HelmReleases) != 1 || c.HelmReleases[0].Name != "app" || c.HelmReleases[0].Namespace != "tenant-a" {
		t.Errorf("releases %+v, want tenant-a/app alone", c.HelmReleases)
	}
	for file, want := range map[string]string{
		"misplaced.yaml":  `tenant-a/sh.helm.release.v1.sidecar.v1 is malformed: the record names namespace "kube-system"`,
		"relabelled.yaml": `tenant-a/sh.helm.release.v1.web.v1 is malformed: its label name="billing"`,
	} {
		errs := errorsFor(s, file)
		if len(errs) != 1 || !strings.Contains(errs[0], want) {
			t.Errorf("%s: errors %v, want one saying %q\n%s", file, errs, want, describeSnap(s))
		}
	}
}
