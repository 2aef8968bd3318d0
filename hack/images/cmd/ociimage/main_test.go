package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestRunWritesLoadableTaggedImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "demo")
	if err := os.WriteFile(bin, []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "demo.tar")
	if err := run(options{binary: bin, tag: "stratus.local/demo:1", out: out, arch: "amd64"}); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag("stratus.local/demo:1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Config.Entrypoint; len(got) != 1 || got[0] != "/demo" {
		t.Errorf("entrypoint = %v, want [/demo]", got)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("platform = %s/%s, want linux/amd64", cfg.OS, cfg.Architecture)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "demo" || h.Mode != 0o755 || string(data) != "#!binary" {
		t.Errorf("layer file = %s %o %q", h.Name, h.Mode, data)
	}
}

func TestRunIsReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "pause")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	var digests []string
	for _, out := range []string{"a.tar", "b.tar"} {
		p := filepath.Join(dir, out)
		if err := run(options{binary: bin, tag: "stratus.local/pause:1", out: p, arch: "amd64"}); err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d.String())
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds differ: %v", digests)
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		o    options
	}{
		{"no binary", options{tag: "a/b:1", out: filepath.Join(dir, "x")}},
		{"relative path", options{binary: "/bin/sh", target: "sh", tag: "a/b:1", out: filepath.Join(dir, "x")}},
		{"bad tag", options{binary: "/bin/sh", tag: "UPPER/Case::", out: filepath.Join(dir, "x")}},
		{"missing binary", options{binary: filepath.Join(dir, "nope"), tag: "a/b:1", out: filepath.Join(dir, "x")}},
	} {
		if err := run(tc.o); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// -add brings a dynamic program with its loader and libraries, -link a
// symbolic link: what a shell needs to run in the image.
func TestAddBringsLibrariesAndLinks(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "agnhost")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "a.tar")
	o := options{binary: bin, tag: "a.example/agnhost:1", out: out, arch: "amd64",
		adds: []string{"/bin/dash"}, links: []string{"/bin/sh=dash"}}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	got := layerEntries(t, o)
	wantFiles(t, got, append([]string{"agnhost", "bin/dash"}, dashLibraries(t)...)...)
	if h := got["bin/sh"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "dash" {
		t.Errorf("bin/sh = %+v, want a link to dash", h)
	}
}

// -busybox adds the program as /bin/busybox and a link to it for each
// applet it lists, except where another file of the image is at that path;
// a program that lists no applets is refused.
func TestBusyboxLinksItsAppletsBehindTheOthers(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "agnhost")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	bb := filepath.Join(dir, "busybox")
	script := "#!/bin/sh\n[ \"$1\" = --list-full ] || exit 1\nprintf 'bin/busybox\\nbin/sh\\nusr/bin/sleep\\nbin/cat\\n'\n"
	if err := os.WriteFile(bb, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	o := options{binary: bin, tag: "a.example/agnhost:1", out: filepath.Join(dir, "a.tar"), arch: "amd64",
		adds: []string{"/bin/dash"}, links: []string{"/bin/sh=dash"}, busybox: bb}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	got := layerEntries(t, o)
	wantFiles(t, got, "bin/busybox", "bin/dash")
	for p, want := range map[string]string{"bin/sh": "dash", "usr/bin/sleep": "/bin/busybox", "bin/cat": "/bin/busybox"} {
		if h := got[p]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != want {
			t.Errorf("%s = %+v, want a link to %s", p, h, want)
		}
	}

	o.busybox = "/bin/true"
	if err := run(o); err == nil || !strings.Contains(err.Error(), "no applets") {
		t.Errorf("-busybox /bin/true: err = %v, want it refused for listing no applets", err)
	}
}

// A dynamic -binary (agnhost built with cgo, as the test bed's other
// Kubernetes programs are) comes with its loader and libraries.
func TestDynamicBinaryBringsLibraries(t *testing.T) {
	dir := t.TempDir()
	o := options{binary: "/bin/dash", target: "/agnhost", tag: "a.example/agnhost:1", out: filepath.Join(dir, "a.tar"), arch: "amd64"}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, layerEntries(t, o), append([]string{"agnhost"}, dashLibraries(t)...)...)
}

// dashLibraries is what ldd names for /bin/dash: its libc and loader.
func dashLibraries(t *testing.T) []string {
	t.Helper()
	libs, err := sharedLibraries("/bin/dash")
	if err != nil || len(libs) == 0 {
		t.Fatalf("ldd /bin/dash: %v %v; want its libc and loader", libs, err)
	}
	return libs
}

// wantFiles fails for each of files that is not a non-empty regular file
// of the layer.
func wantFiles(t *testing.T, got map[string]*tar.Header, files ...string) {
	t.Helper()
	for _, want := range files {
		if h := got[strings.TrimPrefix(want, "/")]; h == nil || h.Typeflag != tar.TypeReg || h.Size == 0 {
			t.Errorf("layer lacks the file %s: %+v", want, h)
		}
	}
}

// layerEntries reads the image run wrote for o and returns its one layer's
// entries by name.
func layerEntries(t *testing.T, o options) map[string]*tar.Header {
	t.Helper()
	tag, err := name.NewTag(o.tag)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(o.out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	got := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
	}
}
