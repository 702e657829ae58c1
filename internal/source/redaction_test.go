package source

import (
	"strings"
	"testing"
)

// A bundle's metadata names each cluster's server as collect read it: a URL with a password or
// a token in its query never reaches the snapshot that every report and view is drawn from.
func TestBundleMetadataServerURLIsRedacted(t *testing.T) {
	const pw, tok = "Pa55w0rdQ7zX", "T0kenV4lue9xL"
	info := "apiVersion: unstick.dev/v1alpha1\nkind: BundleInfo\ncollectedAt: \"2026-11-29T08:00:00Z\"\nclusters:\n" +
		"- name: local\n  role: management\n  server: https://admin:" + pw + "@rancher.example.com/k8s/clusters/local?token=" + tok + "\n" +
		"  contextServer: https://u:" + pw + "@rancher.example.com\n" +
		"errors:\n- cluster: local\n  message: 'listing pods: Get \"https://admin:" + pw + "@rancher.example.com/api/v1/pods\": EOF'\n"
	dir := dirWith(map[string]string{BundleInfoFile: info, "pods.yaml": goodPod})(t, t.TempDir())
	s, err := (&Offline{Path: dir}).Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c := onlyCluster(t, s)
	for _, v := range []string{c.Server, c.ContextServer} {
		if strings.Contains(v, pw) || strings.Contains(v, tok) || !strings.Contains(v, "rancher.example.com") {
			t.Errorf("server %q: want the host kept and the credentials masked", v)
		}
	}
	if len(s.Errors) != 1 || strings.Contains(s.Errors[0].Message, pw) || !strings.Contains(s.Errors[0].Message, "listing pods") {
		t.Errorf("the collection error must be kept, redacted: %+v", s.Errors)
	}
}

// A log is redacted before it is cut to its tail: a value whose key is the last line cut off,
// and a PEM body whose BEGIN line is cut off, are masked in the lines kept.
func TestLogTailRedactedBeforeTheCut(t *testing.T) {
	const pw = "Hunter2secretQ9"
	body := []string{
		"MIIEowIBAAKCAQEAx7QzK3Lq9mTn0R2vYc8pWb5sJd4hFg6eUa1oZi7kXr3yNt2uVw",
		"Qp9Lm2Xk8Rz4Tn6Vb3Hc7Jd1Fg5Sa0Wq2Ee4Rt6Yu8Io0Pa1Sd3Fg5Hj7Kl9Zx2Cv4",
		"Bn6Mq8We0Rt2Yu4Io6Pa8Sd0Fg2Hj4Kl6Zx8Cv0Bn2Mq4We6Rt8Yu0Io2Pa4Sd6Fg8",
		"Hj0Kl2Zx4Cv6Bn8Mq0We2Rt4Yu6Io8Pa0Sd2==",
	}
	log := "level=info msg=\"reading client key\"\n-----BEGIN RSA PRIVATE KEY-----\n" + strings.Join(body, "\n") +
		"\n-----END RSA PRIVATE KEY-----\nlevel=info msg=\"db\" password:\n" + pw + "\nlevel=info msg=\"connected\"\n"
	for n := 2; n <= 7; n++ {
		got := strings.Join(tailLines([]byte(log), Limits{MaxLogLines: n, MaxLineBytes: 16 << 10}), "\n")
		if strings.Contains(got, pw) {
			t.Errorf("tail of %d lines kept the password below its key:\n%s", n, got)
		}
		for _, b := range body {
			if strings.Contains(got, b) {
				t.Errorf("tail of %d lines kept a key line:\n%s", n, got)
				break
			}
		}
		if !strings.HasSuffix(got, `level=info msg="connected"`) {
			t.Errorf("tail of %d lines: the last line changed:\n%s", n, got)
		}
	}
}
