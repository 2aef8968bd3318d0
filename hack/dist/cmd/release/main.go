// Command release cuts a Stratus release from a commit (make release
// VERSION=vX.Y.Z): see hack/dist/release and docs/versioning.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/stratus-ccm/stratus/hack/dist/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	o := release.Options{Log: os.Stdout}
	var platforms string
	flag.StringVar(&o.Root, "root", "../..", "the repository")
	flag.StringVar(&o.Commit, "commit", "HEAD", "the commit to release")
	flag.StringVar(&o.Version, "version", "", "the release's version, vMAJOR.MINOR.PATCH[-PRERELEASE]")
	flag.StringVar(&o.OutDir, "out", "../../_release", "releases go to OUT/VERSION")
	flag.StringVar(&o.Repository, "repository", "ghcr.io/stratus-ccm/stratus", "the image repository")
	flag.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	flag.StringVar(&o.SBOMTool, "sbom-tool", "", "the cyclonedx-gomod binary")
	flag.StringVar(&o.Record, "record", "", "the file naming the last release (hack/release/last-release), rewritten by a release")
	flag.BoolVar(&o.Unreleased, "unreleased", false, "take the notes from CHANGELOG.md's [Unreleased] section (pre-release versions only)")
	flag.Parse()
	for _, p := range strings.Split(platforms, ",") {
		if p = strings.TrimSpace(p); p != "" {
			o.Platforms = append(o.Platforms, p)
		}
	}
	res, err := release.Run(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("released %s: image digest %s; checksums in %s/%s\n", res.Dir, res.Digest, res.Dir, release.SumsFile)
	return nil
}
