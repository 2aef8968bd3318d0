package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// OCI annotation keys used as image labels.
const (
	LabelVersion  = "org.opencontainers.image.version"
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
)

// BinDir is the image directory the binary is installed in.
const BinDir = "usr/local/bin"

// Options say what to build.
type Options struct {
	// ModuleDir is the directory `go build` runs in: the module holding
	// Package.
	ModuleDir string
	// Package is the main package, as `go build` takes it (./cmd/stratus).
	Package string
	// Name is the binary's name in BinDir; default the package's last
	// element.
	Name string
	// Aliases are symlinks to the binary in BinDir (cloud-controller-manager,
	// so that upstream manifests' command works unchanged).
	Aliases []string
	// Entrypoint is the file in BinDir the image runs: Name (the default) or
	// one of Aliases. A binary that picks its command by the name it runs
	// under (stratus as cloud-controller-manager runs the daemon) then
	// starts its daemon from a manifest that sets only args, as every
	// upstream-based CCM image does.
	Entrypoint string
	// Platforms to build, as os/arch (linux/amd64, linux/arm64).
	Platforms []string
	// LDFlags are passed to the linker besides the reproducibility flags,
	// e.g. -X pkg.version=....
	LDFlags string
	// Version, Source and Revision become the OCI labels of the same names.
	Version, Source, Revision string
	// Created is the commit's time: the image's, every layer entry's and
	// the created label's. It must not be now, or builds differ.
	Created time.Time
	// Go is the go command; default "go".
	Go string
}

func (o *Options) defaults() error {
	if o.Name == "" {
		o.Name = path.Base(filepath.ToSlash(o.Package))
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Entrypoint == "" {
		o.Entrypoint = o.Name
	}
	var errs []error
	if o.Entrypoint != o.Name && !slices.Contains(o.Aliases, o.Entrypoint) {
		errs = append(errs, fmt.Errorf("image: Entrypoint %q is neither the binary's Name %q nor one of its Aliases %v", o.Entrypoint, o.Name, o.Aliases))
	}
	if o.Package == "" {
		errs = append(errs, errors.New("image: Package is empty"))
	}
	if len(o.Platforms) == 0 {
		errs = append(errs, errors.New("image: no Platforms"))
	}
	for _, p := range o.Platforms {
		if _, err := v1.ParsePlatform(p); err != nil || !strings.HasPrefix(p, "linux/") {
			errs = append(errs, fmt.Errorf("image: platform %q: want linux/ARCH", p))
		}
	}
	if o.Created.IsZero() {
		errs = append(errs, errors.New("image: Created is zero; give the commit's time"))
	}
	return errors.Join(errs...)
}

// Build compiles the binary for every platform into workDir and returns
// the multi-platform index of the images.
func Build(ctx context.Context, o Options, workDir string) (v1.ImageIndex, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	base, err := tarLayer(baseFiles(), o.Created)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	idx = mutate.Annotations(idx, o.labels()).(v1.ImageIndex)
	for _, p := range o.Platforms {
		plat, _ := v1.ParsePlatform(p)
		bin := filepath.Join(workDir, plat.OS+"_"+plat.Architecture, o.Name)
		if err := o.compile(ctx, plat, bin); err != nil {
			return nil, err
		}
		img, err := o.image(base, plat, bin)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: plat},
		})
	}
	return idx, nil
}

// compile builds a static binary for plat. -trimpath and -buildvcs=false
// keep the build directory and the work tree's state out of the binary;
// -buildid= keeps the link reproducible across machines.
func (o *Options) compile(ctx context.Context, plat *v1.Platform, out string) error {
	ldflags := strings.TrimSpace("-s -w -buildid= " + o.LDFlags)
	cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, o.Package)
	cmd.Dir = o.ModuleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+plat.OS, "GOARCH="+plat.Architecture, "GOFLAGS=-mod=readonly")
	if plat.Variant != "" && plat.Architecture == "arm" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(plat.Variant, "v"))
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("image: go build %s for %s: %w\n%s", o.Package, plat, err, msg)
	}
	return nil
}

func (o *Options) labels() map[string]string {
	return map[string]string{
		LabelTitle:    o.Name,
		LabelVersion:  o.Version,
		LabelSource:   o.Source,
		LabelRevision: o.Revision,
		LabelCreated:  o.Created.UTC().Format(time.RFC3339),
	}
}

// image is the base layer plus a layer with the binary, configured to run
// it as the non-root user.
func (o *Options) image(base v1.Layer, plat *v1.Platform, bin string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	files := []file{{name: path.Join(BinDir, o.Name), mode: 0o755, data: data}}
	for _, a := range o.Aliases {
		files = append(files, file{name: path.Join(BinDir, a), mode: 0o777, linkname: o.Name})
	}
	app, err := tarLayer(files, o.Created)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.Created.UTC()}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "stratus image: CA bundle, passwd", Comment: "base"}},
		mutate.Addendum{Layer: app, History: v1.History{Created: created, CreatedBy: "stratus image: go build " + o.Package}},
	)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = plat.OS, plat.Architecture, plat.Variant
	cf.Created = created
	cf.Config = v1.Config{
		Entrypoint: []string{"/" + path.Join(BinDir, o.Entrypoint)},
		User:       fmt.Sprintf("%d:%d", UID, UID),
		WorkingDir: "/",
		Env:        []string{"PATH=/" + BinDir, "SSL_CERT_FILE=/" + CABundlePath},
		Labels:     o.labels(),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return img, nil
}

// HostPlatform is linux on this machine's architecture: the platform whose
// image goes into the docker-archive tarball by default.
func HostPlatform() string { return "linux/" + runtime.GOARCH }
