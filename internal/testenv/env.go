package testenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Env is a running kube-apiserver and etcd with the Fleet and SUC CRDs installed.
type Env struct {
	// Config talks to the server as an administrator (group system:masters).
	Config *rest.Config
	// Kubeconfig is a file holding Config, its one context named ContextName.
	Kubeconfig  string
	ContextName string
	// Dir holds the kubeconfig, the etcd data and the server's certificates.
	Dir string

	env      *envtest.Environment
	out      *tailWriter
	stopOnce sync.Once
	stopErr  error
	release  func() // StartProcess: drop the directory's lock and pid file
}

type options struct {
	args        map[string][]string
	etcdArgs    map[string][]string
	crds        bool
	contextName string
	noTemplate  bool // make the etcd template: install the CRDs through the API
}

func withoutTemplate() Option { return func(o *options) { o.noTemplate = true } }

// Option configures Start and StartProcess.
type Option func(*options)

// WithRBAC makes the server authorize with RBAC only, as a real cluster does, so a client
// without bindings is refused. (envtest's default is RBAC too; this pins it. The
// administrator of Config is in system:masters either way.)
func WithRBAC() Option { return WithAPIServerArg("authorization-mode", "RBAC") }

// WithAPIServerArg sets a kube-apiserver flag, e.g. ("feature-gates", "X=true").
func WithAPIServerArg(name string, values ...string) Option {
	return func(o *options) { o.args[name] = values }
}

// WithEtcdArg sets an etcd flag, e.g. ("watch-progress-notify-interval", "5s").
func WithEtcdArg(name string, values ...string) Option {
	return func(o *options) {
		if o.etcdArgs == nil {
			o.etcdArgs = map[string][]string{}
		}
		o.etcdArgs[name] = values
	}
}

// WithoutCRDs starts a server without the Fleet and SUC CRDs, e.g. to replay a bundle whose
// own CRDs should be the ones served.
func WithoutCRDs() Option { return func(o *options) { o.crds = false } }

// WithContextName names the kubeconfig's context, cluster and user ("testenv" by default).
func WithContextName(name string) Option { return func(o *options) { o.contextName = name } }

// Start runs an environment for a test and stops it when the test ends. The first use on a
// machine builds kube-apiserver and etcd (minutes); a failure fails the test, it never skips.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	warnIfBuildMayOutlast(t)
	e, err := start(t.Context(), t.TempDir(), opts)
	if err != nil {
		t.Fatalf("starting the test API server: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping the test API server: %v", err)
		}
	})
	return e
}

// warnIfBuildMayOutlast says, before a first build starts, that go test's default 10-minute
// timeout may end it: the test then fails with a bare "test timed out". The go build it
// started keeps filling the Go build cache, so the next run takes seconds.
func warnIfBuildMayOutlast(t testing.TB) {
	dl, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return
	}
	deadline, has := dl.Deadline()
	if !has || time.Until(deadline) > 30*time.Minute || binariesReady() {
		return
	}
	logf("kube-apiserver and etcd are not built yet; with cold Go caches that can outlast this test's deadline (%s left). "+
		"If it times out, run `go run ./hack/testenv binaries` once, or go test with -timeout 30m.", time.Until(deadline).Round(time.Second))
}

var quietControllerRuntime sync.Once

func start(ctx context.Context, dir string, opts []Option) (*Env, error) {
	// Events expire after an hour by default; a replayed bundle's would vanish mid-demo.
	o := options{args: map[string][]string{"event-ttl": {"720h"}}, crds: true, contextName: "testenv"}
	for _, f := range opts {
		f(&o)
	}
	apiserver, etcd, err := Binaries(ctx)
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	if o.crds {
		if crds, err = CRDs(ctx); err != nil {
			return nil, err
		}
	}
	// envtest logs through controller-runtime's logger, which complains on stderr when it was
	// never set.
	quietControllerRuntime.Do(func() { ctrllog.SetLogger(logr.Discard()) })

	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// With the CRDs, etcd starts from a template in which they are already installed
	// (template.go).
	template := ""
	if o.crds && !o.noTemplate {
		key, err := templateKey(apiserver, etcd, crds, o)
		if err != nil {
			return nil, err
		}
		if template, err = etcdTemplate(ctx, key, opts); err != nil {
			return nil, err
		}
	}
	apiserver, etcd, err = guardedPaths(dir, apiserver, etcd)
	if err != nil {
		return nil, err
	}
	out := &tailWriter{max: 32 << 10}
	env := &envtest.Environment{
		CRDs:                     crds,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	if template != "" {
		env.CRDs = nil // already in etcd
	}
	api := env.ControlPlane.GetAPIServer()
	api.Path = apiserver
	api.CertDir = filepath.Join(dir, "pki")
	api.Out, api.Err = out, out
	for name, values := range o.args {
		api.Configure().Set(name, values...)
	}
	env.ControlPlane.Etcd = &envtest.Etcd{Path: etcd, DataDir: filepath.Join(dir, "etcd"), Out: out, Err: out}
	// Nothing here needs etcd to survive a power cut; fsync dominates a replay's time.
	env.ControlPlane.Etcd.Configure().Set("unsafe-no-fsync", "true")
	for name, values := range o.etcdArgs {
		env.ControlPlane.Etcd.Configure().Set(name, values...)
	}
	if template != "" {
		// A fresh copy every start, even where an earlier run left data (StartProcess).
		if err := os.RemoveAll(env.ControlPlane.Etcd.DataDir); err != nil {
			return nil, err
		}
	}
	for _, d := range []string{api.CertDir, env.ControlPlane.Etcd.DataDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if template != "" {
		if err := copyTree(template, env.ControlPlane.Etcd.DataDir); err != nil {
			return nil, fmt.Errorf("testenv: copying the etcd template: %w", err)
		}
	}

	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("testenv: %w\n--- kube-apiserver and etcd output (tail) ---\n%s", err, out.String())
	}
	if template != "" {
		if err := fromTemplate(ctx, cfg, crds); err != nil {
			_ = env.Stop()
			return nil, fmt.Errorf("testenv: %w\n--- kube-apiserver and etcd output (tail) ---\n%s", err, out.String())
		}
	}
	cfg.QPS, cfg.Burst = 500, 1000
	e := &Env{Config: cfg, Dir: dir, ContextName: o.contextName, env: env, out: out,
		Kubeconfig: filepath.Join(dir, "kubeconfig")}
	if err := WriteKubeconfig(e.Kubeconfig, cfg, o.contextName); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// Stop stops the server and etcd; it is safe to call more than once.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		e.stopErr = e.env.Stop()
		if e.release != nil {
			e.release()
		}
	})
	return e.stopErr
}

// Output is the tail of what kube-apiserver and etcd wrote, for failure messages.
func (e *Env) Output() string { return e.out.String() }

// URL is the API server's address.
func (e *Env) URL() string { return e.Config.Host }

// Load replays a bundle into this environment (see Load).
func (e *Env) Load(ctx context.Context, bundlePath string, opts LoadOptions) (*LoadResult, error) {
	return Load(ctx, e.Config, bundlePath, opts)
}

// AddUser returns a config for a client-certificate user with these groups; with RBAC it can
// do only what its bindings allow.
func (e *Env) AddUser(name string, groups ...string) (*rest.Config, error) {
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, &rest.Config{QPS: 500, Burst: 1000})
	if err != nil {
		return nil, fmt.Errorf("testenv: adding user %s: %w", name, err)
	}
	return u.Config(), nil
}

// ServiceAccountConfig creates the ServiceAccount if needed and returns a config that
// authenticates with a token issued for it (TokenRequest; no controller-manager runs here).
func (e *Env) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return nil, err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("testenv: creating namespace %s: %w", namespace, err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("testenv: creating service account %s/%s: %w", namespace, name, err)
	}
	expiry := int64(24 * 3600)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("testenv: requesting a token for %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(e.Config)
	cfg.BearerToken = tr.Status.Token
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg, nil
}

// WriteKubeconfig writes cfg as a kubeconfig whose context, cluster and user are all named
// name, and makes it the current context.
func WriteKubeconfig(path string, cfg *rest.Config, name string) error {
	host := cfg.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	if _, err := url.Parse(host); err != nil {
		return fmt.Errorf("testenv: bad server address %q: %w", cfg.Host, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("testenv: writing kubeconfig %s: %w", path, err)
	}
	return nil
}
