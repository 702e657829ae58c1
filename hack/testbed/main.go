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
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/unstick-dev/unstick/internal/testbed"
	"github.com/unstick-dev/unstick/internal/testenv"
)

const usage = `usage:
  testbed start DIR [--fleet] [--gitjob] [--suc]
                                        start the test bed in the background; writes DIR/kubeconfig
  testbed stop DIR                      stop it and remove what start wrote
  testbed binaries                      build (if needed) every program of the test bed and print their paths
  testbed node-down DIR NODE            stop NODE's kubelet: within --node-monitor-grace-period (20s)
                                        kube-controller-manager sets it Ready=Unknown and taints it unreachable
  testbed node-up DIR NODE              start it again (KWOK plays it and it turns Ready)

The test bed is a real kube-apiserver and etcd (with the Fleet, SUC, Rancher and CAPI CRDs),
kube-controller-manager and kube-scheduler of the same release, and KWOK playing three
nodes: cp-1 (control plane, amd64), worker-1 (amd64) and worker-arm-1 (arm64). Each program
logs to DIR/<program>.log.

--fleet also runs the real Fleet controller (with its agent management) on it, a second test
bed as a downstream cluster in DIR/downstream (context "downstream", nodes down-1 and
down-arm-1) and the real Fleet agent registered from there through a ClusterRegistrationToken:
KUBECONFIG=DIR/kubeconfig:DIR/downstream/kubeconfig reaches both.

--gitjob (implies --fleet) also runs Fleet's gitjob controller, as the fleet chart's gitjob
Deployment does: GitRepos are polled with its real ls-remote and their Jobs created; KWOK
completes the Jobs' pods without running fleet apply.

--suc also runs the real system-upgrade-controller, deployed as its v0.20.1 manifest deploys
it (namespace system-upgrade, ConfigMap default-controller-env, kubectl image
rancher/kubectl:v1.30.3). KWOK's default stages run every Job's pods to completion, so a Plan
applied to the bed goes Complete and its nodes are labelled; failing pulls and wrong
architectures are played by TestRealSUC's stages (go test ./internal/e2e -run TestRealSUC -v).`

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

// options are start's: the directory and what runs besides the bed.
type options struct {
	dir                string
	fleet, gitjob, suc bool
}

func (o options) flags() []string {
	var f []string
	if o.fleet {
		f = append(f, "--fleet")
	}
	if o.gitjob {
		f = append(f, "--gitjob")
	}
	if o.suc {
		f = append(f, "--suc")
	}
	return f
}

func parseStart(cmd string, args []string) (options, error) {
	var o options
	for _, a := range args {
		switch {
		case a == "--fleet":
			o.fleet = true
		case a == "--gitjob":
			o.fleet, o.gitjob = true, true
		case a == "--suc":
			o.suc = true
		case strings.HasPrefix(a, "-"):
			return o, usageError(fmt.Sprintf("%s: unknown flag %s (it takes DIR [--fleet] [--gitjob] [--suc])", cmd, a))
		case o.dir != "":
			return o, usageError(fmt.Sprintf("%s takes one DIR, got %q and %q", cmd, o.dir, a))
		default:
			o.dir = a
		}
	}
	if o.dir == "" {
		return o, usageError(cmd + " takes DIR [--fleet] [--gitjob] [--suc]")
	}
	return o, nil
}

func (u usageError) Error() string { return string(u) }

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("no command")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	switch cmd, rest := args[0], args[1:]; cmd {
	case "start", "serve": // serve is the background half of start
		o, err := parseStart(cmd, rest)
		if err != nil {
			return err
		}
		if cmd == "serve" {
			return serve(ctx, o)
		}
		return start(ctx, o, stdout)
	case "stop":
		if len(rest) != 1 {
			return usageError("stop takes DIR")
		}
		if err := testenv.Stop(rest[0]); err != nil {
			return err
		}
		for _, f := range []string{"kube-controller-manager.log", "kube-scheduler.log", "kwok.log", "kwok.yaml", "testbed.log"} {
			_ = os.Remove(filepath.Join(rest[0], f))
		}
		sucLogs, _ := filepath.Glob(filepath.Join(rest[0], "system-upgrade-controller-*.log"))
		for _, f := range sucLogs {
			_ = os.Remove(f)
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
	case "node-down", "node-up":
		if len(rest) != 2 {
			return usageError(cmd + " takes DIR NODE")
		}
		return nodeKubelet(ctx, cmd == "node-up", rest[0], rest[1], stdout)
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
func start(ctx context.Context, o options, stdout io.Writer) error {
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	if _, ok := testenv.Ready(dir); ok {
		return fmt.Errorf("a test bed is already running in %s (stop it first)", dir)
	}
	if _, err := binaries(ctx); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := append([]string{"serve", dir}, o.flags()...)
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
	if o.suc {
		fmt.Fprintf(stdout, "testbed: system-upgrade-controller %s in namespace system-upgrade (log: %s/system-upgrade-controller-1.log)\n", testenv.SUCVersion, dir)
	}
	if o.fleet {
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
func serve(ctx context.Context, o options) (err error) {
	dir := o.dir
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
	if o.suc {
		// The upstream manifest's kubectl image; KWOK's default stages run its pods.
		mgmt.StartSUC(r, testbed.SUCSettings("rancher/kubectl:v1.30.3"))
	}
	if o.fleet {
		down, err := startBed(ctx, r, filepath.Join(dir, "downstream"), []testbed.Node{
			{Name: "down-1", Labels: map[string]string{"node-role.kubernetes.io/worker": "true"}},
			{Name: "down-arm-1", Arch: "arm64", Labels: map[string]string{"node-role.kubernetes.io/worker": "true"}},
		})
		if err != nil {
			return err
		}
		f := testbed.StartFleet(r, mgmt)
		if o.gitjob {
			f.StartGitJob(r)
		}
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
// first, then kubectl, then kube-controller-manager and kube-scheduler beside KWOK, SUC and
// Fleet. They are built in one module graph (internal/testenv/bedmodule.go), so each build
// after the first reuses most of the packages compiled before it.
func binaries(ctx context.Context) (map[string]string, error) {
	apiserver, etcd, err := testenv.Binaries(ctx)
	if err != nil {
		return nil, err
	}
	kubectl, err := testenv.Kubectl(ctx)
	if err != nil {
		return nil, err
	}
	all, err := testenv.BuildAll(ctx, testenv.Components()...)
	if err != nil {
		return nil, err
	}
	all["kube-apiserver"], all["etcd"], all["kubectl"] = apiserver, etcd, kubectl
	return all, nil
}

// nodeKubelet stops or starts the kubelet KWOK plays for a node of the bed in dir.
func nodeKubelet(ctx context.Context, up bool, dir, node string, stdout io.Writer) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if up {
		err = testbed.StartKubelet(ctx, client, node)
	} else {
		err = testbed.StopKubelet(ctx, client, node)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "testbed: node %s %s\n", node, map[bool]string{true: "started", false: "stopped"}[up])
	return nil
}
