package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/remediate/execute"
)

// userKey is the per-user backup key fix --apply made on first use (TestMain points the
// configuration directory at a directory of the tests' own).
func userKey(t *testing.T) []byte {
	t.Helper()
	return mustRead(t, filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "unstick", execute.KeyFileName))
}

// macOf is HMAC-SHA256 as a backup uses it: each part preceded by its length.
func macOf(key []byte, parts ...[]byte) string {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

const macSuffixLen = len(`,"mac":"`) + 64 + len(`"}`)

// sealWith chains the journal (its lines, then extra) and recomputes backup.json's MAC
// under key, as anyone holding a key can (the format is in docs/security.md): what stops
// such a holder is what the tests using it show. The index digest is left as it is (see
// resealBackup).
func sealWith(t *testing.T, dir string, key []byte, extra ...execute.Entry) {
	t.Helper()
	chainJournal(t, dir, key, extra...)
	sealOrigin(t, dir, key)
}

// chainJournal rewrites the journal's MACs under key (lines added without one get one) and
// records its head in backup.json (whose MAC it leaves alone).
func chainJournal(t *testing.T, dir string, key []byte, extra ...execute.Entry) {
	t.Helper()
	op := filepath.Join(dir, execute.OriginFile)
	var o execute.Origin
	must(t, json.Unmarshal(mustRead(t, op), &o))
	var bodies [][]byte
	for _, line := range bytes.Split(mustRead(t, filepath.Join(dir, execute.JournalFile)), []byte("\n")) {
		switch {
		case len(line) > macSuffixLen && bytes.HasPrefix(line[len(line)-macSuffixLen:], []byte(`,"mac":"`)):
			bodies = append(bodies, append(bytes.Clone(line[:len(line)-macSuffixLen]), '}'))
		case len(line) > 0:
			bodies = append(bodies, line)
		}
	}
	for _, e := range extra {
		b, err := json.Marshal(e)
		must(t, err)
		bodies = append(bodies, b)
	}
	prev := o.ID
	var buf bytes.Buffer
	for _, b := range bodies {
		prev = macOf(key, []byte("unstick "+execute.JournalFile), []byte(prev), b)
		buf.Write(b[:len(b)-1])
		buf.WriteString(`,"mac":"` + prev + `"}` + "\n")
	}
	must(t, os.WriteFile(filepath.Join(dir, execute.JournalFile), buf.Bytes(), 0o600))
	o.Journal = execute.JournalHead{Lines: len(bodies), MAC: prev}
	b, err := json.Marshal(&o)
	must(t, err)
	must(t, os.WriteFile(op, b, 0o600))
}

// sealOrigin recomputes backup.json's MAC under key.
func sealOrigin(t *testing.T, dir string, key []byte) {
	t.Helper()
	op := filepath.Join(dir, execute.OriginFile)
	var o execute.Origin
	must(t, json.Unmarshal(mustRead(t, op), &o))
	o.Key = macOf(key, []byte("unstick backup key id"))[:16]
	o.MAC = ""
	b, err := json.Marshal(&o)
	must(t, err)
	o.MAC = macOf(key, []byte("unstick "+execute.OriginFile), b)
	b, err = json.Marshal(&o)
	must(t, err)
	must(t, os.WriteFile(op, b, 0o600))
}

// countingKubeconfig is a kubeconfig whose context (named as the fleet's) reaches a server
// that only counts the requests it gets: a restore refused before any request leaves it at 0.
func countingKubeconfig(t *testing.T, context string) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		http.Error(w, "counting only", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	kc := clientcmdapi.NewConfig()
	kc.Clusters[context] = &clientcmdapi.Cluster{Server: srv.URL}
	kc.AuthInfos[context] = &clientcmdapi.AuthInfo{Token: "x"}
	kc.Contexts[context] = &clientcmdapi.Context{Cluster: context, AuthInfo: context}
	kc.CurrentContext = context
	return writeKubeconfig(t, kc), &n
}
