package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is stamped at release build time with -ldflags "-X .../internal/cli.Version=v1.2.3".
var Version = ""

// versionString is the stamped version, else the module version, else "dev".
func versionString() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func newVersionCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the unstick version",
		Example: "  unstick version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(s.Out, "unstick %s (%s, %s/%s)\n", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
