package e2e

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// gitServer is a Git smart-HTTP server on the loopback, as far as `git ls-remote` reads one:
// GET <repo>/info/refs?service=git-upload-pack answers the ref advertisement of a branch at a
// commit, a private repository answers 401 to a request without its credentials, and a
// repository it does not hold answers 404 as a Git host does for a renamed or deleted one.
// The gitjob controller's poller (go-git's ls-remote in its own process) reads it over TCP.
type gitServer struct {
	URL string

	mu    sync.Mutex
	repos map[string]*gitRepoState
}

// gitRepoState is one repository: its branch's head and, for a private one, the basic-auth
// password it accepts.
type gitRepoState struct {
	branch, commit string
	user, password string
}

func startGitServer(t *testing.T) *gitServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &gitServer{URL: "http://" + l.Addr().String(), repos: map[string]*gitRepoState{}}
	srv := &http.Server{Handler: s}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// set makes path (e.g. "/acme/shop.git") a repository whose branch is at commit.
func (s *gitServer) set(path string, st gitRepoState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[path] = &st
}

// commitOf is a commit ID as Git writes them (a SHA-1), made from a name.
func commitOf(name string) string {
	h := sha1.Sum([]byte("commit " + name))
	return hex.EncodeToString(h[:])
}

func (s *gitServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutSuffix(r.URL.Path, "/info/refs")
	if !ok || r.URL.Query().Get("service") != "git-upload-pack" {
		http.Error(w, "only the ref advertisement is served", http.StatusNotImplemented)
		return
	}
	s.mu.Lock()
	st := s.repos[path]
	s.mu.Unlock()
	switch {
	case st == nil:
		http.Error(w, "Repository not found.", http.StatusNotFound)
	case st.user != "" && !credentialsMatch(r, st):
		w.Header().Set("WWW-Authenticate", `Basic realm="Git"`)
		http.Error(w, "HTTP Basic: Access denied", http.StatusUnauthorized)
	default:
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(advertisement(st.branch, st.commit))
	}
}

func credentialsMatch(r *http.Request, st *gitRepoState) bool {
	u, p, ok := r.BasicAuth()
	return ok && u == st.user && p == st.password
}

// advertisement is git-upload-pack's answer to info/refs in protocol v0: the service line, a
// flush, HEAD with the capabilities, the branch, and a flush.
func advertisement(branch, commit string) []byte {
	caps := "multi_ack thin-pack side-band side-band-64k ofs-delta shallow deepen-since deepen-not deepen-relative no-progress include-tag multi_ack_detailed no-done symref=HEAD:refs/heads/" + branch + " object-format=sha1 agent=git/2.43.0"
	var b strings.Builder
	b.WriteString(pktLine("# service=git-upload-pack\n"))
	b.WriteString("0000")
	b.WriteString(pktLine(commit + " HEAD\x00" + caps + "\n"))
	b.WriteString(pktLine(commit + " refs/heads/" + branch + "\n"))
	b.WriteString("0000")
	return []byte(b.String())
}

func pktLine(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }
