// Command testenv runs the real kube-apiserver + etcd test environment outside tests, for
// manual testing, demos and benchmarks. hack/testenv.sh is the way to call it:
//
//	testenv start DIR [--no-crds]    start in the background; writes DIR/kubeconfig
//	testenv load DIR BUNDLE [CLUSTER] replay an offline bundle into it
//	testenv stop DIR                 stop it and remove what start wrote
//	testenv binaries                 build (if needed) and print kube-apiserver and etcd
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/unstick-dev/unstick/internal/testenv"
)

const usage = `usage:
  testenv start DIR [--no-crds]       start kube-apiserver + etcd in the background, write DIR/kubeconfig
  testenv load DIR BUNDLE [CLUSTER]   replay an offline bundle (CLUSTER picks clusters/CLUSTER/)
  testenv stop DIR                    stop it and remove what start wrote
  testenv binaries                    build kube-apiserver and etcd if needed and print their paths`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
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
		if len(rest) < 1 || len(rest) > 2 || (len(rest) == 2 && rest[1] != "--no-crds") {
			return usageError("start takes DIR [--no-crds]")
		}
		return start(ctx, rest[0], len(rest) == 2, stdout)
	case "serve": // the background half of start
		if len(rest) < 1 || len(rest) > 2 {
			return usageError("serve takes DIR [--no-crds]")
		}
		return serve(ctx, rest[0], len(rest) == 2)
	case "load":
		if len(rest) < 2 || len(rest) > 3 {
			return usageError("load takes DIR BUNDLE [CLUSTER]")
		}
		cluster := ""
		if len(rest) == 3 {
			cluster = rest[2]
		}
		return load(ctx, rest[0], rest[1], cluster, stderr)
	case "stop":
		if len(rest) != 1 {
			return usageError("stop takes DIR")
		}
		if err := testenv.Stop(rest[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "testenv: stopped %s\n", rest[0])
		return nil
	case "binaries":
		a, e, err := testenv.Binaries(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, a)
		fmt.Fprintln(stdout, e)
		return nil
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return usageError("unknown command " + args[0])
}

// start builds the binaries in the foreground (the slow part, with progress), then runs
// serve detached in its own session and returns once it reports ready.
func start(ctx context.Context, dir string, noCRDs bool, stdout io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, ok := testenv.Ready(dir); ok {
		return fmt.Errorf("an environment is already running in %s (stop it first)", dir)
	}
	if _, _, err := testenv.Binaries(ctx); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := []string{"serve", dir}
	if noCRDs {
		args = append(args, "--no-crds")
	}
	var url string
	pid, took, err := testenv.Detach(ctx, dir, filepath.Join(dir, "testenv.log"), args, 3*time.Minute, func() bool {
		u, ok := testenv.Ready(dir)
		url = u
		return ok
	})
	if err != nil {
		return fmt.Errorf("the environment: %w", err)
	}
	fmt.Fprintf(stdout, "testenv: kube-apiserver %s at %s ready in %s (pid %d)\n", testenv.KubernetesVersion, url, took.Round(10*time.Millisecond), pid)
	fmt.Fprintf(stdout, "export KUBECONFIG=%s\n", filepath.Join(dir, testenv.Kubeconfig))
	return nil
}

// serve runs the environment until it is signalled.
func serve(ctx context.Context, dir string, noCRDs bool) error {
	var opts []testenv.Option
	if noCRDs {
		opts = append(opts, testenv.WithoutCRDs())
	}
	began := time.Now()
	e, err := testenv.StartProcess(ctx, dir, opts...)
	if err != nil {
		return err
	}
	fmt.Printf("testenv: serving %s in %s, kubeconfig %s\n", e.URL(), time.Since(began).Round(10*time.Millisecond), e.Kubeconfig)
	<-ctx.Done()
	fmt.Println("testenv: stopping")
	return e.Stop()
}

func load(ctx context.Context, dir, bundle, cluster string, stderr io.Writer) error {
	kc := filepath.Join(dir, testenv.KubeconfigDirect)
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return fmt.Errorf("reading %s (is the environment started?): %w", kc, err)
	}
	if _, err = testenv.Load(ctx, cfg, bundle, testenv.LoadOptions{Cluster: cluster, Log: stderr}); err != nil {
		return err
	}
	// The pods' logs, for the log proxy in front of the server (it has no kubelet).
	n, err := testenv.CopyLogs(bundle, cluster, filepath.Join(dir, testenv.LogsDir))
	if err != nil {
		return fmt.Errorf("copying the bundle's pod logs: %w", err)
	}
	fmt.Fprintf(stderr, "testenv: %d container logs served through %s\n", n, filepath.Join(dir, testenv.Kubeconfig))
	return nil
}
