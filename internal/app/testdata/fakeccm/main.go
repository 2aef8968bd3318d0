// Command fakeccm is the stratus command with a test provider registered
// only in upstream's global registry, for the daemon's integration tests.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/stratus-ccm/stratus/internal/cli"
	"github.com/stratus-ccm/stratus/pkg/testbed/fakeprovider"
)

func main() {
	fakeprovider.Register()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args)
	stop()
	os.Exit(code)
}
