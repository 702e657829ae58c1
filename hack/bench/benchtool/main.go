// Command benchtool is the Go half of the hack/bench scripts:
//
//	benchtool kubectl                     build (once) and print the path of kubectl, from the
//	                                      same k8s.io/kubernetes release as the test apiserver
//	benchtool load KUBECONFIG BUNDLE      replay an offline bundle into a running test apiserver
//	                                      (32 parallel writers)
//	benchtool stuck SCAN.json             the downstream clusters an `unstick scan -o json`
//	                                      report calls stuck: one "cluster NAME" or "ns NAMESPACE"
//	                                      line per finding at warning or above about a Fleet
//	                                      Cluster or one of its BundleDeployments
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/unstick-dev/unstick/internal/testenv"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if len(args) == 0 {
		return fmt.Errorf("usage: benchtool kubectl | load KUBECONFIG BUNDLE | stuck SCAN.json")
	}
	switch args[0] {
	case "kubectl":
		p, err := testenv.Kubectl(ctx)
		if err != nil {
			return err
		}
		fmt.Println(p)
		return nil
	case "load":
		if len(args) != 3 {
			return fmt.Errorf("usage: benchtool load KUBECONFIG BUNDLE")
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", args[1])
		if err != nil {
			return err
		}
		_, err = testenv.Load(ctx, cfg, args[2], testenv.LoadOptions{Workers: 32, Log: os.Stderr})
		return err
	case "stuck":
		if len(args) != 2 {
			return fmt.Errorf("usage: benchtool stuck SCAN.json")
		}
		return stuck(args[1])
	}
	return fmt.Errorf("unknown command %q", args[0])
}

func stuck(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rep struct {
		Findings []struct {
			ID       string `json:"id"`
			Severity string `json:"severity"`
			Object   struct {
				Kind, Namespace, Name string
			} `json:"object"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	set := map[string]bool{}
	for _, f := range rep.Findings {
		switch f.Severity {
		case "critical", "error", "warning":
		default:
			continue
		}
		switch f.Object.Kind {
		case "Cluster":
			set["cluster "+f.Object.Name] = true
		case "BundleDeployment":
			set["ns "+f.Object.Namespace] = true
		}
	}
	lines := make([]string, 0, len(set))
	for l := range set {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	return nil
}
