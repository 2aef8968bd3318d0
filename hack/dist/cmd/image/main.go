// Command image builds the OCI image of a Go main package without a
// container engine (make image). A provider author runs it on their own
// module:
//
//	go run github.com/stratus-ccm/stratus/hack/dist/cmd/image \
//	    -module-dir . -package ./cmd/my-ccm -repository registry.example/my-ccm ...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/stratus-ccm/stratus/hack/dist/image"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	var o image.Options
	var platforms, aliases, repository, tag, out, tarPlatform, created string
	flag.StringVar(&o.ModuleDir, "module-dir", ".", "the module directory go build runs in")
	flag.StringVar(&o.Package, "package", "", "the main package to build, e.g. ./cmd/stratus")
	flag.StringVar(&o.Name, "name", "", "the binary's name in /usr/local/bin (default: the package's last element)")
	flag.StringVar(&aliases, "alias", "", "comma-separated symlinks to the binary in /usr/local/bin")
	flag.StringVar(&o.Entrypoint, "entrypoint", "", "the image's entrypoint: the binary's name or one of -alias (default: the binary's name)")
	flag.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	flag.StringVar(&o.LDFlags, "ldflags", "", "extra linker flags, e.g. -X pkg.version=v1.2.3")
	flag.StringVar(&o.Version, "version", "", "the org.opencontainers.image.version label (and the default tag)")
	flag.StringVar(&o.Revision, "revision", "", "the org.opencontainers.image.revision label (default: git rev-parse HEAD)")
	flag.StringVar(&o.Source, "source", "", "the org.opencontainers.image.source label (a repository URL)")
	flag.StringVar(&created, "created", "", "the image's time, RFC 3339 or Unix seconds (default: $SOURCE_DATE_EPOCH, else the commit's time)")
	flag.StringVar(&repository, "repository", "", "the image repository the tarball is tagged with (default: the binary's name)")
	flag.StringVar(&tag, "tag", "", "the tag (default: -version)")
	flag.StringVar(&out, "out", "bin/image", "the output directory")
	flag.StringVar(&tarPlatform, "tarball-platform", image.HostPlatform(), "the platform of the docker-archive tarball")
	flag.Parse()

	o.Platforms = splitList(platforms)
	o.Aliases = splitList(aliases)
	var err error
	if o.Revision == "" {
		if o.Revision, err = git(o.ModuleDir, "rev-parse", "HEAD"); err != nil {
			return err
		}
	}
	if o.Created, err = createdTime(created, o.ModuleDir, o.Revision); err != nil {
		return err
	}
	if tag == "" {
		tag = o.Version
	}
	if repository == "" {
		repository = o.Name
		if repository == "" {
			repository = o.Package[strings.LastIndex(o.Package, "/")+1:]
		}
	}
	ref, err := name.NewTag(repository + ":" + tag)
	if err != nil {
		return fmt.Errorf("-repository=%s -tag=%s: %w", repository, tag, err)
	}
	work, err := os.MkdirTemp("", "stratus-image-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	idx, err := image.Build(ctx, o, work)
	if err != nil {
		return err
	}
	res, err := image.Write(idx, out, ref, tarPlatform)
	if err != nil {
		return err
	}
	fmt.Printf("%s %s\nOCI layout (%s): %s\ndocker-archive (%s): %s\n", ref, res.Digest, strings.Join(o.Platforms, ", "), res.Layout, tarPlatform, res.Tarball)
	return nil
}

// createdTime is the -created flag, else SOURCE_DATE_EPOCH, else the
// commit's committer time: never the wall clock, so builds repeat.
func createdTime(flagValue, dir, rev string) (time.Time, error) {
	v := flagValue
	if v == "" {
		v = os.Getenv("SOURCE_DATE_EPOCH")
	}
	if v == "" {
		out, err := git(dir, "show", "-s", "--format=%ct", rev)
		if err != nil {
			return time.Time{}, err
		}
		v = out
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(secs, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("-created=%s: want RFC 3339 or Unix seconds: %w", v, err)
	}
	return t.UTC(), nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
