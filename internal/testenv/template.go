package testenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// A server with the CRDs starts from a copy of etcd's data directory as an earlier server of
// the same binaries, flags and CRDs left it, instead of from an empty one.
//
// Installing the CRDs through the API is most of a start: measured on a 2-core machine, a
// start that creates them cost 8.4–10.9 CPU-seconds and 17–25 s, one from the copied data
// 4.8–5.8 CPU-seconds and 4.5–9 s, as much as a start without CRDs (docs/performance.md).
// The copy holds exactly what the earlier server wrote: its bootstrap objects (namespaces,
// RBAC roles, priority-and-fairness configuration, the kubernetes Service) and the CRDs, created
// and established by a real kube-apiserver through the API. The new server serves them from
// etcd as any restarted server does; Start still waits until discovery lists every one.
//
// The template is made once per machine and key (the binaries, the CRDs, the flags), under a
// file lock, in the user cache directory next to the binaries.

const templateStamp = "complete"

// templateRecipe changes whenever what makeTemplate leaves in the data changes, so that no
// template made the old way is used.
const templateRecipe = "2: the CRDs installed, the namespaces removed"

var (
	templateMu    sync.Mutex
	templateReady = map[string]string{} // key → etcd data directory, made or checked by this process
)

// templateKey names the data a server with these binaries, CRDs and flags starts from.
func templateKey(apiserver, etcd string, crds []*apiextensionsv1.CustomResourceDefinition, o options) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, templateRecipe)
	for _, bin := range []string{apiserver, etcd} {
		fi, err := os.Stat(bin)
		if err != nil {
			return "", fmt.Errorf("testenv: %w", err)
		}
		fmt.Fprintf(h, "%s %d %d\n", bin, fi.Size(), fi.ModTime().UnixNano())
	}
	enc := json.NewEncoder(h)
	for _, c := range crds {
		if err := enc.Encode(c); err != nil {
			return "", err
		}
	}
	for _, args := range []map[string][]string{o.args, o.etcdArgs} {
		for _, n := range slices.Sorted(maps.Keys(args)) {
			fmt.Fprintf(h, "--%s=%q\n", n, args[n])
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// etcdTemplate returns the etcd data directory to copy for key, making it first if no process
// has: a server is started with the CRDs installed through the API, then stopped.
func etcdTemplate(ctx context.Context, key string, opts []Option) (string, error) {
	templateMu.Lock()
	defer templateMu.Unlock()
	if d, ok := templateReady[key]; ok {
		return d, nil
	}
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	root := filepath.Join(cache, "etcd-templates")
	dir := filepath.Join(root, key)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("testenv: %w", err)
	}
	if !templateMade(dir) {
		if err := makeTemplateLocked(ctx, root, dir, opts); err != nil {
			return "", err
		}
	}
	now := time.Now()
	_ = os.Chtimes(dir, now, now) // in use: removeStaleTemplates keeps it
	templateReady[key] = filepath.Join(dir, "etcd")
	return templateReady[key], nil
}

// templateMade reports whether dir is a whole template. One is only ever published whole
// (publishTemplate), so a directory without its stamp is one an older version left half made.
func templateMade(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, templateStamp))
	if err != nil {
		return false
	}
	fi, err := os.Stat(filepath.Join(dir, "etcd", "member"))
	return err == nil && fi.IsDir()
}

// makeTemplateLocked makes the template under its file lock, unless another process made it
// while this one waited: then that one is used.
func makeTemplateLocked(ctx context.Context, root, dir string, opts []Option) error {
	unlock, err := lockFile(ctx, dir+".lock", func(holder int) {
		logf("%s is making the etcd template %s; waiting for it", holderName(holder), dir)
	})
	if err != nil {
		return fmt.Errorf("testenv: locking %s.lock: %w", dir, err)
	}
	defer unlock()
	if templateMade(dir) {
		return nil
	}
	removeStaleTemplates(root, dir)
	return makeTemplate(ctx, root, dir, opts)
}

// makeTemplate makes the template in a directory of its own and publishes it whole.
func makeTemplate(ctx context.Context, root, dir string, opts []Option) error {
	started := time.Now()
	work, err := os.MkdirTemp(root, "making-")
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	defer os.RemoveAll(work)
	e, err := start(ctx, work, append(append([]Option{}, opts...), withoutTemplate()))
	if err != nil {
		return fmt.Errorf("testenv: making the etcd template: %w", err)
	}
	// The namespaces go: every server recreates kube-system, kube-public, kube-node-lease and
	// default on start, with UIDs of its own. (kube-system's UID is a cluster's identity: fix
	// and restore tell clusters apart by it, and two servers from one template would be one
	// cluster to them.)
	if err := e.env.ControlPlane.APIServer.Stop(); err != nil {
		_ = e.Stop()
		return fmt.Errorf("testenv: stopping the server that made the etcd template: %w", err)
	}
	if err := deleteNamespaces(ctx, e.env.ControlPlane.Etcd.URL.String()); err != nil {
		_ = e.Stop()
		return fmt.Errorf("testenv: making the etcd template: %w", err)
	}
	if err := e.Stop(); err != nil {
		return fmt.Errorf("testenv: stopping the server that made the etcd template: %w", err)
	}
	if err := publishTemplate(work, dir, started); err != nil {
		return fmt.Errorf("testenv: publishing the etcd template: %w", err)
	}
	logf("made the etcd template %s in %s", dir, time.Since(started).Round(100*time.Millisecond))
	return nil
}

// publishTemplate gives the data in work, with its stamp, the template's name in one rename:
// no process ever sees part of it. Where a whole template already has the name (another
// process made it without this one's lock), that one stays and is used.
func publishTemplate(work, dir string, started time.Time) error {
	staged := filepath.Join(work, "template")
	if err := os.Mkdir(staged, 0o755); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(work, "etcd"), filepath.Join(staged, "etcd")); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(staged, templateStamp), []byte(started.UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Rename(staged, dir); err == nil || templateMade(dir) {
		return nil
	}
	// A directory an older version left half made, under the lock this process holds.
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(staged, dir)
}

// deleteNamespaces removes the Namespace objects from etcd, through etcd's JSON gateway to its
// v3 API (no etcd client library needed): the objects inside them stay, as the namespaces
// will be back when the next server starts.
func deleteNamespaces(ctx context.Context, etcdURL string) error {
	prefix := "/registry/namespaces/"
	body, _ := json.Marshal(map[string]string{
		"key":       base64.StdEncoding.EncodeToString([]byte(prefix)),
		"range_end": base64.StdEncoding.EncodeToString([]byte(prefix[:len(prefix)-1] + "0")),
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(etcdURL, "/")+"/v3/kv/deleterange", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("deleting the namespaces from etcd: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		Deleted string `json:"deleted"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil {
		return fmt.Errorf("deleting the namespaces from etcd: %s: %s", resp.Status, b)
	}
	if n, _ := strconv.Atoi(out.Deleted); n < len(systemNamespaces) {
		return fmt.Errorf("deleting the namespaces from etcd: %q deleted, want the %d system namespaces", out.Deleted, len(systemNamespaces))
	}
	return nil
}

// systemNamespaces are the namespaces every kube-apiserver creates when they are missing.
var systemNamespaces = []string{"default", "kube-node-lease", "kube-public", "kube-system"}

// removeStaleTemplates removes templates no process has used for a week (other binaries,
// CRDs or flags) and directories a killed process left half made; never keep, and never a
// template whose lock another process holds.
func removeStaleTemplates(root, keep string) {
	ents, _ := os.ReadDir(root)
	for _, d := range ents {
		fi, err := d.Info()
		p := filepath.Join(root, d.Name())
		if err != nil || !d.IsDir() || p == keep || time.Since(fi.ModTime()) < 7*24*time.Hour {
			continue
		}
		if strings.HasPrefix(d.Name(), "making-") {
			_ = os.RemoveAll(p)
			continue
		}
		unlock, ok, err := tryLock(p + ".lock")
		if err != nil || !ok {
			continue
		}
		_ = os.RemoveAll(p)
		_ = os.Remove(p + ".lock")
		unlock()
	}
}

// copyTree copies the template's files into dst. etcd preallocates its write-ahead log (64
// MiB a file, mostly zeros): runs of zeros become holes, so a copy costs what the data holds.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o700)
		case d.Type().IsRegular():
			return copySparse(p, to)
		default:
			return fmt.Errorf("testenv: %s in the etcd template is not a regular file", p)
		}
	})
}

func copySparse(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	var size int64
	for {
		n, rerr := io.ReadFull(in, buf)
		if n > 0 {
			if isZero(buf[:n]) {
				if _, err := out.Seek(int64(n), io.SeekCurrent); err != nil {
					out.Close()
					return err
				}
			} else if _, err := out.Write(buf[:n]); err != nil {
				out.Close()
				return err
			}
			size += int64(n)
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
	}
	if err := out.Truncate(size); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

var zeros = make([]byte, 64<<10)

func isZero(b []byte) bool { return bytes.Equal(b, zeros[:len(b)]) }

// fromTemplate finishes a start from a template: every CRD is in discovery and the server has
// created its system namespaces. (The API server's identity lease is named after the host, so
// the new server takes over the one the template's server held, as a restarted server does.)
func fromTemplate(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if err := envtest.WaitForCRDs(cfg, crds, envtest.CRDInstallOptions{PollInterval: 50 * time.Millisecond, MaxTime: 60 * time.Second}); err != nil {
		return fmt.Errorf("waiting for the template's CRDs to be served: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, ns := range systemNamespaces {
		for {
			_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("waiting for the server to create namespace %s: %w", ns, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}
