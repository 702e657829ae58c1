// Command testbed runs the real-controllers test bed (internal/testbed) outside tests:
// kube-apiserver, etcd, kube-controller-manager, kube-scheduler and KWOK nodes, and on
// request the real system-upgrade-controller. hack/testbed.sh is the way to call it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/unstick-dev/unstick/internal/testbed"
	"github.com/unstick-dev/unstick/internal/testenv"
)

const usage = `usage:
  testbed start DIR [--fleet]   start the test bed in the background; writes DIR/kubeconfig
  testbed stop DIR              stop it and remove what start wrote
  testbed binaries              build (if needed) every program of the test bed and print their paths

The test bed is a real kube-apiserver and etcd (with the Fleet, SUC, Rancher and CAPI CRDs),
kube-controller-manager and kube-scheduler of the same release, and KWOK playing three
nodes: cp-1 (control plane, amd64), worker-1 (amd64) and worker-arm-1 (arm64). Each program
logs to DIR/<program>.log.

--fleet also runs the real Fleet controller (with its agent management) on it, a second test
bed as a downstream cluster in DIR/downstream (context "downstream", nodes down-1 and
down-arm-1) and the real Fleet agent registered from there through a ClusterRegistrationToken:
KUBECONFIG=DIR/kubeconfig:DIR/downstream/kubeconfig reaches both.`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "testbed:", err)
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError string

func (u usageError) Error() string { return string(u) }

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("no command")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	switch cmd, rest := args[0], args[1:]; cmd {
	case "start":
		if len(rest) < 1 || len(rest) > 2 || (len(rest) == 2 && rest[1] != "--fleet") {
			return usageError("start takes DIR [--fleet]")
		}
		return start(ctx, rest[0], len(rest) == 2, stdout)
	case "serve": // the background half of start
		if len(rest) < 1 || len(rest) > 2 {
			return usageError("serve takes DIR [--fleet]")
		}
		return serve(ctx, rest[0], len(rest) == 2)
	case "stop":
		if len(rest) != 1 {
			return usageError("stop takes DIR")
		}
		if err := testenv.Stop(rest[0]); err != nil {
			return err
		}
		for _, f := range []string{"kube-controller-manager.log", "kube-scheduler.log", "kwok.log", "kwok.yaml"} {
			_ = os.Remove(filepath.Join(rest[0], f))
		}
		fmt.Fprintf(stdout, "testbed: stopped %s\n", rest[0])
		return nil
	case "binaries":
		all, err := binaries(ctx)
		if err != nil {
			return err
		}
		names := make([]string, 0, len(all))
		for n := range all {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(stdout, "%-26s %s\n", n, all[n])
		}
		return nil
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return usageError("unknown command " + args[0])
}

// nodes are the test bed's KWOK nodes, labelled as an RKE2 cluster's are.
var nodes = []testbed.Node{
	{Name: "cp-1", Labels: map[string]string{
		"node-role.kubernetes.io/control-plane": "true", "node-role.kubernetes.io/etcd": "true", "node-role.kubernetes.io/master": "true"}},
	{Name: "worker-1", Labels: map[string]string{"node-role.kubernetes.io/worker": "true"}},
	{Name: "worker-arm-1", Arch: "arm64", Labels: map[string]string{"node-role.kubernetes.io/worker": "true"}},
}

// start builds the programs in the foreground (the slow part, with progress), then runs serve
// detached in its own session and returns once it reports ready.
func start(ctx context.Context, dir string, fleet bool, stdout io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, ok := testenv.Ready(dir); ok {
		return fmt.Errorf("a test bed is already running in %s (stop it first)", dir)
	}
	if _, _, err := testenv.Binaries(ctx); err != nil {
		return err
	}
	// One build makes KWOK, the system-upgrade-controller and Fleet (testenv.Controllers).
	if _, err := testbed.Build(ctx); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := []string{"serve", dir}
	if fleet {
		args = append(args, "--fleet")
	}
	pid, took, err := testenv.Detach(ctx, dir, filepath.Join(dir, "testbed.log"), args, 6*time.Minute, func() bool {
		_, err := os.Stat(filepath.Join(dir, bedReady))
		return err == nil
	})
	if err != nil {
		return fmt.Errorf("the test bed: %w", err)
	}
	url, _ := testenv.Ready(dir)
	fmt.Fprintf(stdout, "testbed: kube-apiserver %s at %s with kube-controller-manager, kube-scheduler and KWOK nodes cp-1, worker-1, worker-arm-1, ready in %s (pid %d)\n",
		testenv.KubernetesVersion, url, took.Round(100*time.Millisecond), pid)
	if fleet {
		fmt.Fprintf(stdout, "testbed: Fleet controller on %s, agent registered from the downstream test bed in %s\n", filepath.Base(dir), filepath.Join(dir, "downstream"))
		fmt.Fprintf(stdout, "export KUBECONFIG=%s:%s\n", filepath.Join(dir, testenv.Kubeconfig), filepath.Join(dir, "downstream", testenv.Kubeconfig))
	} else {
		fmt.Fprintf(stdout, "export KUBECONFIG=%s\n", filepath.Join(dir, testenv.Kubeconfig))
	}
	fmt.Fprintf(stdout, "logs: %s/{kube-controller-manager,kube-scheduler,kwok}.log; stop with: hack/testbed.sh stop %s\n", dir, dir)
	return nil
}

// bedReady is written once the controllers run and the nodes are Ready.
const bedReady = "testbed.ready"

// serve runs the test bed until it is signalled.
func serve(ctx context.Context, dir string, fleet bool) (err error) {
	began := time.Now()
	_ = os.Remove(filepath.Join(dir, bedReady))
	r := &runner{ctx: ctx, dir: dir}
	defer r.cleanup()
	defer func() {
		switch p := recover().(type) {
		case nil:
		case fatal:
			err = errors.New(string(p))
		default:
			panic(p)
		}
	}()
	mgmt, err := startBed(ctx, r, dir, nodes)
	if err != nil {
		return err
	}
	if fleet {
		down, err := startBed(ctx, r, filepath.Join(dir, "downstream"), []testbed.Node{
			{Name: "down-1", Labels: map[string]string{"node-role.kubernetes.io/worker": "true"}},
			{Name: "down-arm-1", Arch: "arm64", Labels: map[string]string{"node-role.kubernetes.io/worker": "true"}},
		})
		if err != nil {
			return err
		}
		f := testbed.StartFleet(r, mgmt)
		a := f.Register(r, down, "downstream", testbed.AgentOptions{})
		fmt.Printf("testbed: Fleet agent registered as cluster %s/%s\n", a.ClusterNamespace, a.ClusterName)
	}
	if err := os.WriteFile(filepath.Join(dir, bedReady), []byte(mgmt.URL()+"\n"), 0o644); err != nil {
		return err
	}
	defer os.Remove(filepath.Join(dir, bedReady))
	fmt.Printf("testbed: serving %s in %s\n", mgmt.URL(), time.Since(began).Round(10*time.Millisecond))
	<-ctx.Done()
	fmt.Println("testbed: stopping")
	return nil
}

// startBed starts an API server in dir (kubeconfig context named after dir) and the
// controllers and KWOK nodes around it; the runner stops them.
func startBed(ctx context.Context, r *runner, dir string, nodes []testbed.Node) (*testbed.Bed, error) {
	env, err := testenv.StartProcess(ctx, dir, testbed.EnvOptions(filepath.Base(dir))...)
	if err != nil {
		return nil, err
	}
	r.Cleanup(func() { _ = env.Stop() })
	bed, err := testbed.StartOn(ctx, env, testbed.Options{Nodes: nodes})
	if bed != nil {
		r.Cleanup(bed.Close)
	}
	return bed, err
}

// runner is testbed.T outside a test: Fatalf ends serve with the error, Cleanup runs when
// serve returns.
type runner struct {
	ctx      context.Context
	dir      string
	cleanups []func()
}

type fatal string

func (r *runner) Helper()                        {}
func (r *runner) Fatalf(format string, a ...any) { panic(fatal(fmt.Sprintf(format, a...))) }
func (r *runner) Logf(format string, a ...any)   { fmt.Printf(format+"\n", a...) }
func (r *runner) Cleanup(f func())               { r.cleanups = append(r.cleanups, f) }
func (r *runner) Context() context.Context       { return r.ctx }
func (r *runner) TempDir() string {
	d, err := os.MkdirTemp(r.dir, "tmp-")
	if err != nil {
		r.Fatalf("%v", err)
	}
	r.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func (r *runner) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// binaries builds every program of the test bed (or finds it built): kube-apiserver and etcd
// beside KWOK, SUC and Fleet, then kube-controller-manager and kube-scheduler, which reuse
// most of kube-apiserver's compiled packages.
func binaries(ctx context.Context) (map[string]string, error) {
	var (
		wg          sync.WaitGroup
		ctrls       map[string]string
		ctrlsErr    error
		all         = map[string]string{}
		apiserver   string
		etcd        string
		apiErr, err error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctrls, ctrlsErr = testenv.Controllers.Build(ctx)
	}()
	apiserver, etcd, apiErr = testenv.Binaries(ctx)
	var kube map[string]string
	if apiErr == nil {
		kube, err = testenv.KubeControllers.Build(ctx)
	}
	wg.Wait()
	for _, e := range []error{apiErr, err, ctrlsErr} {
		if e != nil {
			return nil, e
		}
	}
	for _, m := range []map[string]string{kube, ctrls} {
		for k, v := range m {
			all[k] = v
		}
	}
	all["kube-apiserver"], all["etcd"] = apiserver, etcd
	return all, nil
}
