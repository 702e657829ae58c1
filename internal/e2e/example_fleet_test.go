package e2e

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// The example fleet is replayed once, one API server per cluster, and every test that only
// reads it runs on that one replay; the Rancher proxy's, whose last step writes (fix --apply
// through the proxy), runs last. (Each used to replay the fleet, or the clusters it needed, for
// itself: 23 API server starts where 9 do.)
//
// Not parallel: the Rancher subtests set the token's environment variable (t.Setenv), which
// no other test of the package may see.
func TestExampleFleetLive(t *testing.T) {
	kubectl, err := testenv.Kubectl(t.Context())
	if err != nil {
		t.Fatalf("building kubectl: %v", err)
	}
	root := t.TempDir()
	servers := startExampleServers(t, root)
	byName := map[string]exampleServer{}
	for _, s := range servers {
		byName[s.name] = s
	}
	// No current context: a printed command without --context must fail, not guess.
	kubeconfig := exampleKubeconfig(t, servers, "no-such-context")

	t.Run("live scan matches offline and collect", func(t *testing.T) {
		liveScanMatchesOfflineAndCollect(t, kubeconfig)
	})
	t.Run("printed commands are pasteable", func(t *testing.T) {
		exampleCommandsArePasteable(t, kubeconfig, kubectl)
	})
	t.Run("lists are paginated", func(t *testing.T) {
		listsArePaginated(t, byName["local"].env)
	})
	t.Run("a cluster-info dump scans as the cluster does", func(t *testing.T) {
		scanReadsAClusterInfoDump(t, byName["prod-us-1"].env)
	})
	t.Run("scan through faults", func(t *testing.T) {
		scanUnderFaults(t, exampleKubeconfig(t, []exampleServer{byName["local"], byName["prod-eu-1"]}, "local"))
	})
	t.Run("serve retries its start through faults", func(t *testing.T) {
		serveStartRetries(t, byName["prod-eu-1"].env)
	})
	// Last: it adds Rancher's management clusters to local and ends with fix --apply.
	t.Run("through Rancher's cluster proxy", func(t *testing.T) {
		rancherProxy(t, startRancherFleet(t, root, servers))
	})
}

// exampleKubeconfig writes a kubeconfig with a context per server, named after its cluster,
// each reaching its server through a log stand-in (the test server has no kubelet: pods/log
// is answered from the bundle's log files, all else goes to the server). The stand-ins stop
// when t ends.
func exampleKubeconfig(t *testing.T, servers []exampleServer, current string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	for _, es := range servers {
		addProxiedContext(t, kc, es.name, es.env.Config, es.logs)
	}
	kc.CurrentContext = current
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
