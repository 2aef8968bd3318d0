// Command stratus is the Stratus cloud-controller-manager and its tools.
// Invoked as "cloud-controller-manager" it runs the daemon directly, so the
// binary drops into upstream manifests unchanged.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/stratus-ccm/stratus/cmd/stratus/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args)
	stop()
	os.Exit(code)
}
