// Command genfleet writes a synthetic Rancher management cluster of N downstream clusters as an
// offline bundle (internal/fleetgen), for scale tests and benchmarks.
//
//	go run ./hack/genfleet -n 5000 -out /tmp/fleet-5000
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/unstick-dev/unstick/internal/fleetgen"
)

func main() {
	n := flag.Int("n", 1000, "downstream clusters")
	out := flag.String("out", "", "bundle directory to write (must not exist)")
	stuck := flag.Float64("stuck", 2, "percent of clusters stuck in each way")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: genfleet -n N -out DIR")
		os.Exit(2)
	}
	if err := fleetgen.Write(*out, *n, *stuck/100, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "genfleet:", err)
		os.Exit(1)
	}
}
