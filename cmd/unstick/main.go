// Command unstick finds, explains and safely fixes stuck upgrades in Rancher fleets.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/unstick-dev/unstick/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, cli.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}
