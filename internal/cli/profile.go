package cli

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/spf13/pflag"
)

// profileNames are the profiles --profile captures, as kubectl names them (plus allocs).
var profileNames = []string{"none", "cpu", "heap", "allocs", "goroutine", "threadcreate", "block", "mutex"}

// profiler captures one runtime profile of the whole run, for a support engineer to read
// with `go tool pprof`: CPU from the start of the command to its end, the others at its end.
type profiler struct {
	name, output string
	file         *os.File
}

func (p *profiler) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&p.name, "profile", "none", "profile of unstick itself to capture: one of "+strings.Join(profileNames, "|"))
	fs.StringVar(&p.output, "profile-output", "profile.pprof", "file --profile writes (created, or truncated)")
}

// start opens the output and, for a CPU profile, starts sampling. A bad name or an output
// that cannot be created is a usage error: nothing has run yet.
func (p *profiler) start() error {
	if p.name == "none" || p.name == "" {
		return nil
	}
	known := false
	for _, n := range profileNames {
		known = known || n == p.name
	}
	if !known {
		return usageErrorf("--profile %q: want one of %s", p.name, strings.Join(profileNames, "|"))
	}
	f, err := os.Create(p.output)
	if err != nil {
		return usageErrorf("--profile-output: %v", err)
	}
	p.file = f
	switch p.name {
	case "cpu":
		return pprof.StartCPUProfile(f)
	case "block":
		runtime.SetBlockProfileRate(1)
	case "mutex":
		runtime.SetMutexProfileFraction(1)
	}
	return nil
}

// stop writes the profile; a failure to write it is reported, never changes the exit code.
func (p *profiler) stop(errOut interface{ Write([]byte) (int, error) }) {
	if p.file == nil {
		return
	}
	var err error
	switch p.name {
	case "cpu":
		pprof.StopCPUProfile()
	case "heap":
		runtime.GC()
		err = pprof.Lookup("heap").WriteTo(p.file, 0)
	default:
		err = pprof.Lookup(p.name).WriteTo(p.file, 0)
	}
	if cerr := p.file.Close(); err == nil {
		err = cerr
	}
	p.file = nil
	if err != nil {
		fmt.Fprintf(errOut, "warning: --profile %s: writing %s: %v\n", p.name, p.output, err)
	}
}
