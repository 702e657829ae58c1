package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/source"
)

// fleetKubeconfig writes a kubeconfig with two contexts (prod-eu-1, prod-us-1), a spare
// cluster and a spare user, and the files a kubeconfig may name; it returns its path and dir.
func fleetKubeconfig(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"ca.crt", "admin.crt", "admin.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: eu
  cluster: {server: "https://eu.example.test:6443"}
- name: us
  cluster: {server: "https://us.example.test:6443"}
- name: spare
  cluster: {server: "https://spare.example.test:6443"}
users:
- name: reader
  user: {token: reader-token}
- name: operator
  user: {token: operator-token}
contexts:
- name: prod-eu-1
  context: {cluster: eu, user: reader}
- name: prod-us-1
  context: {cluster: us, user: reader}
current-context: prod-eu-1
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc, dir
}

// targetsOf parses args as the live verbs do and resolves the targets they read.
func targetsOf(t *testing.T, args ...string) []source.Target {
	t.Helper()
	k := newKubeFlags()
	fs := pflag.NewFlagSet("scan", pflag.ContinueOnError)
	k.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	ts, err := k.targets(t.Context())
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return ts
}

// kubeTargets parses args as the live verbs do and returns the REST config of each context.
func kubeTargets(t *testing.T, args ...string) map[string]*rest.Config {
	t.Helper()
	ts := targetsOf(t, args...)
	out := map[string]*rest.Config{}
	for _, tg := range ts {
		out[tg.Name] = tg.Config
	}
	return out
}

// Every connection flag kubectl honours ends up in the REST config of every context read,
// not only in the help text.
func TestConnectionFlagsReachTheRESTConfig(t *testing.T) {
	kc, dir := fleetKubeconfig(t)
	both := []string{"--kubeconfig", kc, "--context", "prod-eu-1", "--context", "prod-us-1"}
	cases := []struct {
		flags []string
		check func(c *rest.Config) string
	}{
		{[]string{"--as", "jane", "--as-group", "fleet-readers", "--as-group", "auditors", "--as-uid", "1001"}, func(c *rest.Config) string {
			if c.Impersonate.UserName != "jane" || !reflect.DeepEqual(c.Impersonate.Groups, []string{"fleet-readers", "auditors"}) || c.Impersonate.UID != "1001" {
				return "impersonation " + strings.Join(append([]string{c.Impersonate.UserName, c.Impersonate.UID}, c.Impersonate.Groups...), ",")
			}
			return ""
		}},
		{[]string{"--user", "operator"}, func(c *rest.Config) string {
			if c.BearerToken != "operator-token" {
				return "token " + c.BearerToken
			}
			return ""
		}},
		{[]string{"--cluster", "spare"}, func(c *rest.Config) string {
			if c.Host != "https://spare.example.test:6443" {
				return "host " + c.Host
			}
			return ""
		}},
		{[]string{"--server", "https://other.example.test:443", "--token", "flag-token"}, func(c *rest.Config) string {
			if c.Host != "https://other.example.test:443" || c.BearerToken != "flag-token" {
				return "host/token " + c.Host + " " + c.BearerToken
			}
			return ""
		}},
		{[]string{"--client-certificate", filepath.Join(dir, "admin.crt"), "--client-key", filepath.Join(dir, "admin.key"),
			"--certificate-authority", filepath.Join(dir, "ca.crt"), "--tls-server-name", "api.internal"}, func(c *rest.Config) string {
			if c.CertFile != filepath.Join(dir, "admin.crt") || c.KeyFile != filepath.Join(dir, "admin.key") ||
				c.CAFile != filepath.Join(dir, "ca.crt") || c.ServerName != "api.internal" {
				return "tls " + c.CertFile + " " + c.KeyFile + " " + c.CAFile + " " + c.ServerName
			}
			return ""
		}},
		{[]string{"--insecure-skip-tls-verify"}, func(c *rest.Config) string {
			if !c.Insecure {
				return "not insecure"
			}
			return ""
		}},
		{[]string{"--request-timeout", "7s"}, func(c *rest.Config) string {
			if c.Timeout != 7*time.Second {
				return "timeout " + c.Timeout.String()
			}
			return ""
		}},
		{nil, func(c *rest.Config) string {
			// Without --request-timeout a request is bounded by --timeout.
			if c.Timeout != 60*time.Second || c.Impersonate.UserName != "" || c.BearerToken != "reader-token" {
				return "defaults " + c.Timeout.String() + " " + c.Impersonate.UserName + " " + c.BearerToken
			}
			return ""
		}},
	}
	for _, tc := range cases {
		got := kubeTargets(t, append(append([]string{}, both...), tc.flags...)...)
		if len(got) != 2 {
			t.Fatalf("%v: %d targets, want 2", tc.flags, len(got))
		}
		for name, cfg := range got {
			if msg := tc.check(cfg); msg != "" {
				t.Errorf("%v: context %s: %s", tc.flags, name, msg)
			}
		}
	}
	// Each context keeps its own cluster when no flag overrides it.
	got := kubeTargets(t, both...)
	if got["prod-eu-1"].Host != "https://eu.example.test:6443" || got["prod-us-1"].Host != "https://us.example.test:6443" {
		t.Errorf("hosts %s, %s", got["prod-eu-1"].Host, got["prod-us-1"].Host)
	}
}

// KUBECONFIG is read when --kubeconfig is not given, as kubectl reads it.
func TestKubeconfigEnvironment(t *testing.T) {
	kc, _ := fleetKubeconfig(t)
	t.Setenv("KUBECONFIG", kc)
	got := kubeTargets(t, "--as", "jane")
	if c := got["prod-eu-1"]; c == nil || c.Host != "https://eu.example.test:6443" || c.Impersonate.UserName != "jane" {
		t.Errorf("the current context of $KUBECONFIG was not read with --as: %+v", got)
	}
}

// forContext copies every exported field of cli-runtime's ConfigFlags: a field added by a
// newer cli-runtime and not copied would be a flag registered and then dropped.
func TestForContextCopiesEveryFlag(t *testing.T) {
	k := newKubeFlags()
	c := k.forContext("prod-eu-1")
	src, dst := reflect.ValueOf(k.cf).Elem(), reflect.ValueOf(c).Elem()
	for i := 0; i < src.NumField(); i++ {
		f := src.Type().Field(i)
		if !f.IsExported() || f.Name == "Context" {
			continue
		}
		if f.Type.Kind() == reflect.Func {
			if src.Field(i).IsNil() != dst.Field(i).IsNil() {
				t.Errorf("%s is not copied", f.Name)
			}
			continue
		}
		if src.Field(i).Interface() != dst.Field(i).Interface() {
			t.Errorf("%s is not copied", f.Name)
		}
	}
	if c.Context == nil || *c.Context != "prod-eu-1" {
		t.Errorf("Context = %v", c.Context)
	}
}

// A context the kubeconfig lacks is a usage error (exit 2) naming the contexts it has.
func TestUnknownContextIsAUsageError(t *testing.T) {
	kc, _ := fleetKubeconfig(t)
	for _, verb := range []string{"scan", "preflight", "images", "fix", "collect", "serve"} {
		args := []string{verb, "--kubeconfig", kc, "--context", "prod-eu-2"}
		if verb == "collect" {
			args = append(args, "--to", filepath.Join(t.TempDir(), "b.tgz"))
		}
		_, errOut, code := run(t, args...)
		if code != ExitUsage {
			t.Errorf("%s: exit %d, want 2: %s", verb, code, errOut)
		}
		if !strings.Contains(errOut, `"prod-eu-2"`) || !strings.Contains(errOut, "prod-eu-1, prod-us-1") {
			t.Errorf("%s: the error does not name the context and the known ones: %s", verb, errOut)
		}
	}
}

// Negative counts and durations are refused before any cluster is contacted.
func TestNegativeLiveLimitsAreRefused(t *testing.T) {
	kc, _ := fleetKubeconfig(t)
	for _, flag := range []string{"--log-lines=-1", "--concurrency=-2", "--concurrency=0", "--timeout=-5s"} {
		for _, verb := range []string{"scan", "fix", "collect", "serve"} {
			args := []string{verb, "--kubeconfig", kc, flag}
			if verb == "collect" {
				args = append(args, "--to", filepath.Join(t.TempDir(), "b.tgz"))
			}
			_, errOut, code := run(t, args...)
			name, _, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
			if code != ExitUsage || !strings.Contains(errOut, "--"+name) {
				t.Errorf("%s %s: exit %d, stderr %q; want a usage error naming --%s", verb, flag, code, errOut, name)
			}
		}
	}
}

// Connection flags have no meaning for an offline bundle: combined with --from they are a
// usage error, whichever flag it is (a silently ignored --as would mislead).
func TestConnectionFlagsRefusedWithFrom(t *testing.T) {
	for _, flag := range []string{"--as=jane", "--server=https://x.example.test", "--request-timeout=5s", "--insecure-skip-tls-verify", "--context=a"} {
		for _, verb := range []string{"scan", "preflight", "images", "fix"} {
			_, errOut, code := run(t, verb, "--from", example, flag)
			if code != ExitUsage || !strings.Contains(errOut, "cannot be combined") {
				t.Errorf("%s --from %s: exit %d, stderr %q", verb, flag, code, errOut)
			}
		}
	}
}

// Commands name the kubeconfig file only when one was given with --kubeconfig, as an
// absolute path (they may be pasted from another directory); $KUBECONFIG is the shell's
// own, so commands need not name it.
func TestTargetsNameTheKubeconfigGiven(t *testing.T) {
	kc, dir := fleetKubeconfig(t)
	t.Chdir(dir)
	files := func(args ...string) map[string]string {
		out := map[string]string{}
		for _, tg := range targetsOf(t, args...) {
			out[tg.Name] = tg.Kubeconfig
		}
		return out
	}
	got := files("--kubeconfig", filepath.Base(kc), "--all-contexts")
	want := map[string]string{"prod-eu-1": kc, "prod-us-1": kc}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with --kubeconfig %s: %v, want %v", filepath.Base(kc), got, want)
	}
	t.Setenv("KUBECONFIG", kc)
	if got := files("--context", "prod-us-1"); got["prod-us-1"] != "" {
		t.Errorf("with $KUBECONFIG only, commands name %q; want no file", got["prod-us-1"])
	}
}
