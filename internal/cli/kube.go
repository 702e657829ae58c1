package cli

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/unstick-dev/unstick/internal/source"
)

// kubeFlags are kubectl's connection flags (cli-runtime), with --context made repeatable and
// --all-contexts added, so one run can read a whole fleet of contexts.
type kubeFlags struct {
	cf          *genericclioptions.ConfigFlags
	contexts    []string
	allContexts bool
	timeout     time.Duration
	concurrency int
	logLines    int64
}

func newKubeFlags() *kubeFlags {
	cf := genericclioptions.NewConfigFlags(true)
	cf.Context = nil // replaced by a repeatable --context
	cf.Namespace = nil
	cf.CacheDir = nil
	return &kubeFlags{cf: cf}
}

func (k *kubeFlags) addFlags(fs *pflag.FlagSet) {
	k.cf.AddFlags(fs)
	fs.StringArrayVar(&k.contexts, "context", nil, "kubeconfig context to read (repeatable; default: the current context)")
	fs.BoolVar(&k.allContexts, "all-contexts", false, "read every context of the kubeconfig")
	fs.DurationVar(&k.timeout, "timeout", 60*time.Second, "give up on a cluster that has not been read in this time")
	fs.IntVar(&k.concurrency, "concurrency", 8, "clusters read at once (and lists at once within a cluster)")
	fs.Int64Var(&k.logLines, "log-lines", 500, "lines of each interesting container log to read")
}

// used reports whether any live flag was given.
func (k *kubeFlags) used(fs *pflag.FlagSet) bool {
	used := false
	fs.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "context", "all-contexts", "kubeconfig", "server", "cluster", "user", "token", "as":
			used = true
		}
	})
	return used
}

// targets resolves the contexts to read into REST configs.
func (k *kubeFlags) targets() ([]source.Target, error) {
	loader := k.cf.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w (to scan an offline bundle instead, use --from DIR|FILE.tar.gz)", err)
	}
	var names []string
	switch {
	case k.allContexts:
		for n := range raw.Contexts {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) == 0 {
			return nil, fmt.Errorf("--all-contexts: the kubeconfig has no contexts")
		}
	case len(k.contexts) > 0:
		names = k.contexts
	default:
		if raw.CurrentContext == "" && (k.cf.APIServer == nil || *k.cf.APIServer == "") {
			return nil, fmt.Errorf("no current context in the kubeconfig: pass --context NAME or --kubeconfig FILE (or --from BUNDLE for an offline scan)")
		}
		names = []string{raw.CurrentContext}
	}
	var out []source.Target
	for _, n := range names {
		if _, ok := raw.Contexts[n]; !ok && n != "" {
			return nil, fmt.Errorf("context %q not found in the kubeconfig (it has: %s)", n, contextList(raw.Contexts))
		}
		overrides := &clientcmd.ConfigOverrides{CurrentContext: n}
		if k.cf.Insecure != nil && *k.cf.Insecure {
			overrides.ClusterInfo.InsecureSkipTLSVerify = true
		}
		if k.cf.BearerToken != nil && *k.cf.BearerToken != "" {
			overrides.AuthInfo.Token = *k.cf.BearerToken
		}
		if k.cf.APIServer != nil && *k.cf.APIServer != "" {
			overrides.ClusterInfo.Server = *k.cf.APIServer
		}
		cfg, err := clientcmd.NewNonInteractiveClientConfig(raw, n, overrides, loader.ConfigAccess()).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("context %q: %w", n, err)
		}
		name := n
		if name == "" {
			name = "default"
		}
		cfg.Timeout = k.timeout
		out = append(out, source.Target{Name: name, Server: cfg.Host, Config: cfg})
	}
	return out, nil
}

func contextList[V any](m map[string]V) string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "no contexts"
	}
	return strings.Join(names, ", ")
}

func (k *kubeFlags) live(progress func(done, total int)) (*source.Live, error) {
	ts, err := k.targets()
	if err != nil {
		return nil, err
	}
	return &source.Live{Targets: ts, Timeout: k.timeout, Concurrency: k.concurrency, LogLines: k.logLines, Progress: progress}, nil
}
