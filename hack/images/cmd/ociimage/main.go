// Command ociimage wraps one binary into a single-layer image and
// writes it as an image tarball (docker-archive, tagged), the format `ctr
// images import` and `docker load` read. Equal inputs give equal digests: the
// layer's timestamps and the image's creation time are fixed. A dynamic
// binary comes with the shared libraries ldd names for it, so a program
// built with the machine's defaults (cgo on) runs as a static one does.
//
// -add puts more of the machine's programs beside it, each with the shared
// libraries ldd names (Kubernetes' e2e specs run sh, curl and nc in the
// agnhost image), and -link adds symbolic links (/bin/sh -> dash).
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// epoch is every timestamp in the image, so rebuilding changes nothing.
func epoch() time.Time { return time.Unix(0, 0).UTC() }

type options struct {
	binary string // the file to put in the image
	target string // its absolute path inside the image, also the entrypoint
	tag    string // the image reference the tarball records
	out    string // the tarball to write
	arch   string
	adds   []string // SRC or SRC=DST: the machine's programs to add, with their libraries
	links  []string // DST=TARGET: symbolic links to add
	args   []string // the image's default arguments (Cmd)
	// busybox is a static busybox of this machine: the image gets it as
	// /bin/busybox with a link for each applet that no other file of the
	// image takes, as an Alpine-based image has them.
	busybox string
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "", "binary to put in the image (with the shared libraries ldd lists, if dynamic)")
	flag.StringVar(&o.target, "path", "", "absolute path of the binary in the image (default /<binary's name>)")
	flag.StringVar(&o.tag, "tag", "", "image reference, e.g. stratus.local/pause:1")
	flag.StringVar(&o.out, "out", "", "tarball to write")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "the image's architecture")
	flag.Func("add", "SRC[=DST]: a program of this machine to add (with the shared libraries ldd lists); repeatable", func(v string) error {
		o.adds = append(o.adds, v)
		return nil
	})
	flag.Func("link", "DST=TARGET: a symbolic link to add; repeatable", func(v string) error {
		o.links = append(o.links, v)
		return nil
	})
	flag.StringVar(&o.busybox, "busybox", "", "a busybox to add (with its libraries, if dynamic), with a link for every applet the image has no other program for")
	flag.Func("arg", "a default argument of the binary (the image's Cmd), as upstream's agnhost has pause; repeatable", func(v string) error {
		o.args = append(o.args, v)
		return nil
	})
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.binary == "" || o.tag == "" || o.out == "" {
		return errors.New("-binary, -tag and -out are required")
	}
	if o.target == "" {
		o.target = "/" + path.Base(o.binary)
	}
	if !path.IsAbs(o.target) {
		return fmt.Errorf("-path %q: must be absolute", o.target)
	}
	ref, err := name.NewTag(o.tag)
	if err != nil {
		return fmt.Errorf("-tag %q: %w", o.tag, err)
	}
	data, err := os.ReadFile(o.binary)
	if err != nil {
		return fmt.Errorf("-binary: %w", err)
	}
	files := []file{{path: o.target[1:], data: data, mode: 0o755}}
	libs, err := libraryFiles(o.binary)
	if err != nil {
		return fmt.Errorf("-binary: %w", err)
	}
	files = append(files, libs...)
	extra, err := extraFiles(o.adds, o.links)
	if err != nil {
		return err
	}
	files = append(files, extra...)
	if o.busybox != "" {
		// Last, so that the programs named above win: layer keeps the
		// first file of a path.
		bb, err := busyboxFiles(o.busybox)
		if err != nil {
			return err
		}
		files = append(files, bb...)
	}
	img, err := build(files, o.target, o.arch, o.args)
	if err != nil {
		return err
	}
	tmp := o.out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return fmt.Errorf("write %s: %w", o.out, err)
	}
	if err := os.Rename(tmp, o.out); err != nil {
		return fmt.Errorf("write %s: %w", o.out, err)
	}
	return nil
}

// build returns an image of one layer holding files, run as target with
// no arguments.
func build(files []file, target, arch string, args []string) (v1.Image, error) {
	layerTar, err := layer(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{Time: epoch()}
	cfg.Config.Entrypoint = []string{target}
	cfg.Config.Cmd = args
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	return img, nil
}

// file is one entry of the layer: a regular file, or a symbolic link
// when link is set. path is relative to the root.
type file struct {
	path string
	data []byte
	mode int64
	link string
}

// layer is a tar of files and their parent directories, all owned by
// root, every timestamp the epoch; a path given twice keeps the first.
func layer(files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f.path] {
			continue
		}
		var dirs []string
		for d := path.Dir(f.path); d != "." && !seen[d]; d = path.Dir(d) {
			dirs = append([]string{d}, dirs...)
		}
		for _, d := range dirs {
			seen[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch()}); err != nil {
				return nil, fmt.Errorf("layer: %w", err)
			}
		}
		seen[f.path] = true
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.path, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch()}
		if f.link != "" {
			h = &tar.Header{Typeflag: tar.TypeSymlink, Name: f.path, Linkname: f.link, Mode: 0o777, ModTime: epoch()}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return buf.Bytes(), nil
}
