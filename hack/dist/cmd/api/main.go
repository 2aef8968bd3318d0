// Command api records the exported Go API of pkg/ for a release (make
// api-baseline) or compares the tree with the last record and says which
// changes CHANGELOG.md does not declare (make api-check; the same check is
// a test of hack/dist/apicheck, so make test runs it).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/stratus-ccm/stratus/hack/dist/apicheck"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	root := flag.String("root", "../..", "the repository's root (the main module)")
	record := flag.String("record", "", "record the API of -commit as this release's (vX.Y.Z) baseline")
	commit := flag.String("commit", "HEAD", "the commit -record records")
	flag.Parse()
	if *record != "" {
		path, err := apicheck.Record(ctx, *root, *commit, *record)
		if err != nil {
			return err
		}
		fmt.Println("recorded", path)
		return nil
	}
	changes, undeclared, err := apicheck.Check(ctx, *root)
	if err != nil {
		return err
	}
	for _, c := range changes {
		fmt.Printf("%s (incompatible: %v)\n", c.Package, c.Incompatible())
		for _, ch := range c.Changes {
			fmt.Printf("  - %s\n", ch.Message)
		}
	}
	for _, e := range undeclared {
		fmt.Fprintln(os.Stderr, e)
	}
	if len(undeclared) > 0 {
		return fmt.Errorf("%d API change(s) not declared in CHANGELOG.md (docs/versioning.md says how)", len(undeclared))
	}
	return nil
}
