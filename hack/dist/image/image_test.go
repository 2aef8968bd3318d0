package image_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"errors"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/stratus-ccm/stratus/hack/dist/image"
)

const (
	testVersion  = "v0.0.0-imagetest"
	testRevision = "0123456789abcdef0123456789abcdef01234567"
	versionPkg   = "github.com/stratus-ccm/stratus/internal/version"
)

var created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// stratusOptions build the real stratus binary, as make image does, for
// the host's platform only: cross-compiling the whole tree for a second
// architecture costs minutes on CI's two cores, and the other platform's
// assembly is covered by TestMultiPlatformIndex with a small program.
func stratusOptions() image.Options {
	return image.Options{
		ModuleDir: "../../..", Package: "./cmd/stratus", Aliases: []string{"cloud-controller-manager"}, Entrypoint: "cloud-controller-manager",
		Platforms: []string{image.HostPlatform()},
		LDFlags:   "-X " + versionPkg + ".version=" + testVersion + " -X " + versionPkg + ".commit=" + testRevision,
		Version:   testVersion, Revision: testRevision, Source: "https://github.com/stratus-ccm/stratus", Created: created,
	}
}

func build(ctx context.Context, t *testing.T, o image.Options) v1.ImageIndex {
	t.Helper()
	idx, err := image.Build(ctx, o, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func digest(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestStratusImage builds the stratus image twice, pushes it to an
// in-process registry, pulls it back and checks what a runtime would use,
// then runs the binary taken out of the layer.
func TestStratusImage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	idx := build(ctx, t, stratusOptions())
	if again := build(ctx, t, stratusOptions()); digest(t, again) != digest(t, idx) {
		t.Fatalf("two builds of one commit differ: %s and %s", digest(t, idx), digest(t, again))
	}

	pulled := pushAndPull(ctx, t, idx)
	plat, _ := v1.ParsePlatform(image.HostPlatform())
	img, err := image.PlatformImage(pulled, plat)
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, img, plat)
	files := extract(t, img)
	checkFiles(t, files)
	checkStatic(t, files["usr/local/bin/stratus"].data)
	runVersion(t, files["usr/local/bin/stratus"].data)
	runEntrypoint(t, img, files)
	checkOutputs(t, idx, img)
}

// pushAndPull pushes idx to go-containerregistry's in-process registry
// and pulls it back by tag.
func pushAndPull(ctx context.Context, t *testing.T, idx v1.ImageIndex) v1.ImageIndex {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ref, err := name.NewTag(strings.TrimPrefix(srv.URL, "http://")+"/stratus:"+testVersion, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(ref, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, pulled) != digest(t, idx) {
		t.Fatalf("pulled index %s, pushed %s", digest(t, pulled), digest(t, idx))
	}
	return pulled
}

func checkConfig(t *testing.T, img v1.Image, plat *v1.Platform) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// The daemon, as every upstream-based CCM image runs it: a manifest
	// that sets only args starts it.
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != "/usr/local/bin/cloud-controller-manager" {
		t.Errorf("entrypoint %v, want [/usr/local/bin/cloud-controller-manager]", got)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cf.Config.User)
	}
	if cf.OS != plat.OS || cf.Architecture != plat.Architecture {
		t.Errorf("platform %s/%s, want %s", cf.OS, cf.Architecture, plat)
	}
	if !cf.Created.Equal(created) {
		t.Errorf("created %v, want the commit's time %v", cf.Created.Time, created)
	}
	for k, want := range map[string]string{
		image.LabelVersion: testVersion, image.LabelRevision: testRevision,
		image.LabelSource: "https://github.com/stratus-ccm/stratus", image.LabelCreated: "2026-01-02T03:04:05Z",
	} {
		if got := cf.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
}

type entry struct {
	hdr  *tar.Header
	data []byte
}

// extract reads the image's flattened file system.
func extract(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	out := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = entry{hdr: h, data: data}
	}
}

func checkFiles(t *testing.T, files map[string]entry) {
	t.Helper()
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/env"} {
		if _, ok := files[shell]; ok {
			t.Errorf("the image holds %s", shell)
		}
	}
	bin := files["usr/local/bin/stratus"]
	if bin.hdr == nil || bin.hdr.Mode != 0o755 || bin.hdr.Uid != 0 {
		t.Fatalf("usr/local/bin/stratus: %+v, want a root-owned 0755 file", bin.hdr)
	}
	if l := files["usr/local/bin/cloud-controller-manager"].hdr; l == nil || l.Typeflag != tar.TypeSymlink || l.Linkname != "stratus" {
		t.Errorf("usr/local/bin/cloud-controller-manager: %+v, want a symlink to stratus", l)
	}
	if h := files["home/nonroot"].hdr; h == nil || h.Uid != image.UID {
		t.Errorf("home/nonroot: %+v, want owned by %d", h, image.UID)
	}
	if !strings.Contains(string(files["etc/passwd"].data), "nonroot:x:65532:65532:") {
		t.Errorf("etc/passwd lacks the nonroot user:\n%s", files["etc/passwd"].data)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(files[image.CABundlePath].data) || bytes.Count(files[image.CABundlePath].data, []byte("BEGIN CERTIFICATE")) < 100 {
		t.Errorf("%s holds no usable CA bundle", image.CABundlePath)
	}
	for n, e := range files {
		if !e.hdr.ModTime.Equal(created) {
			t.Errorf("%s: mtime %v, want the commit's time", n, e.hdr.ModTime)
		}
	}
}

// checkStatic: the binary needs no dynamic loader and no shared library,
// which an image without a libc could not give it.
func checkStatic(t *testing.T, bin []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is dynamically linked (program header %v)", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary imports libraries %v (%v)", libs, err)
	}
}

func runVersion(t *testing.T, bin []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stratus")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("stratus version: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), testVersion) || !strings.Contains(string(out), testRevision) {
		t.Errorf("stratus version printed %q, want %s and %s", out, testVersion, testRevision)
	}
}

// runEntrypoint runs the image's entrypoint as a runtime would, from a copy
// of the image's bin directory (the binary and its symlinks), with the
// arguments a vendor's manifest passes to its own daemon: the daemon's
// flags, no subcommand. --version makes the daemon print and exit; an
// unknown flag or command would fail instead.
func runEntrypoint(t *testing.T, img v1.Image, files map[string]entry) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for name, e := range files {
		if !strings.HasPrefix(name, image.BinDir+"/") {
			continue
		}
		dst := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if e.hdr.Typeflag == tar.TypeSymlink {
			err = os.Symlink(e.hdr.Linkname, dst)
		} else {
			err = os.WriteFile(dst, e.data, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string{"--v=2", "--cloud-provider=localcloud", "--leader-elect=true", "--version"}, cf.Config.Cmd...)
	out, err := exec.Command(filepath.Join(root, filepath.FromSlash(cf.Config.Entrypoint[0])), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("entrypoint %v with args %v: %v\n%s", cf.Config.Entrypoint, args, err, out)
	}
	if !strings.Contains(string(out), testVersion) {
		t.Errorf("entrypoint %v %v printed %q, want the daemon's version %s", cf.Config.Entrypoint, args, out, testVersion)
	}
	cli := filepath.Join(root, image.BinDir, "stratus")
	if out, err := exec.Command(cli, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "localcloud") {
		t.Errorf("/%s/stratus --help: %v\n%s; want the command list", image.BinDir, err, out)
	}
}

// checkOutputs writes the layout and the tarball and reads them back.
func checkOutputs(t *testing.T, idx v1.ImageIndex, img v1.Image) {
	t.Helper()
	dir := t.TempDir()
	ref := name.MustParseReference("ghcr.io/stratus-ccm/stratus:" + testVersion).(name.Tag)
	res, err := image.Write(idx, dir, ref, image.HostPlatform())
	if err != nil {
		t.Fatal(err)
	}
	lp, err := layout.FromPath(res.Layout)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != digest(t, idx) || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != testVersion {
		t.Fatalf("layout index.json = %+v, want the index %s named %s", m.Manifests, digest(t, idx), testVersion)
	}
	fromTar, err := tarball.ImageFromPath(res.Tarball, &ref)
	if err != nil {
		t.Fatal(err)
	}
	want, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := fromTar.ConfigName(); err != nil || got != want {
		t.Errorf("tarball's image config %v (%v), want %s", got, err, want)
	}
	if _, err := fs.Stat(os.DirFS(dir), "digest"); err != nil {
		t.Error(err)
	}
}

// TestMultiPlatformIndex builds a small program for two architectures and
// checks that each platform's image holds a binary for that architecture.
func TestMultiPlatformIndex(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := image.Options{ModuleDir: ".", Package: "./testdata/hello", Platforms: []string{"linux/amd64", "linux/arm64"},
		Version: testVersion, Revision: testRevision, Created: created}
	built := build(ctx, t, o)
	if again := build(ctx, t, o); digest(t, again) != digest(t, built) {
		t.Fatalf("two builds differ: %s and %s", digest(t, built), digest(t, again))
	}
	idx := pushAndPull(ctx, t, built)
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 2 || m.Annotations[image.LabelVersion] != testVersion {
		t.Fatalf("index %+v, want two images and the version annotation", m)
	}
	for plat, machine := range map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64} {
		p, _ := v1.ParsePlatform(plat)
		img, err := image.PlatformImage(idx, p)
		if err != nil {
			t.Fatal(err)
		}
		if cf, err := img.ConfigFile(); err != nil || cf.OS != p.OS || cf.Architecture != p.Architecture {
			t.Errorf("%s image's config: %+v (%v)", plat, cf, err)
		}
		f, err := elf.NewFile(bytes.NewReader(extract(t, img)["usr/local/bin/hello"].data))
		if err != nil {
			t.Fatalf("%s: %v", plat, err)
		}
		if f.Machine != machine {
			t.Errorf("%s image holds a %v binary", plat, f.Machine)
		}
	}
}

func TestOptionsAreChecked(t *testing.T) {
	for field, o := range map[string]image.Options{
		"darwin/arm64": {Package: "./x", Platforms: []string{"darwin/arm64"}, Created: created},
		"Created":      {Package: "./x", Platforms: []string{"linux/amd64"}},
		"Platforms":    {Package: "./x", Created: created},
		"Entrypoint":   {Package: "./x", Platforms: []string{"linux/amd64"}, Created: created, Aliases: []string{"y"}, Entrypoint: "z"},
	} {
		_, err := image.Build(context.Background(), o, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Build(%+v) = %v, want an error naming %s", o, err, field)
		}
	}
}
