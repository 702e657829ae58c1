package e2e

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// addProxiedContext adds a context named name to kc that reaches cfg's API server through the
// log stand-in serving logsDir (the test server has no kubelet), stopped when the test ends.
func addProxiedContext(t *testing.T, kc *clientcmdapi.Config, name string, cfg *rest.Config, logsDir string) {
	t.Helper()
	server, closeProxy, err := testenv.ServeLogProxy(cfg, logsDir)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { _ = closeProxy() })
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: server}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
}

// writeKubeconfig writes kc to a new file of the test and returns its path.
func writeKubeconfig(t *testing.T, kc *clientcmdapi.Config) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}
