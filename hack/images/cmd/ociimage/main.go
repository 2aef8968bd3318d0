// Command ociimage wraps one static binary into a single-layer image and
// writes it as an image tarball (docker-archive, tagged), the format `ctr
// images import` and `docker load` read. Equal inputs give equal digests: the
// layer's timestamps and the image's creation time are fixed.
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
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "", "static binary to put in the image")
	flag.StringVar(&o.target, "path", "", "absolute path of the binary in the image (default /<binary's name>)")
	flag.StringVar(&o.tag, "tag", "", "image reference, e.g. stratus.local/pause:1")
	flag.StringVar(&o.out, "out", "", "tarball to write")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "the image's architecture")
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
	img, err := build(data, o.target, o.arch)
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

// build returns an image of one layer holding data at target (0755), run
// as target with no arguments.
func build(data []byte, target, arch string) (v1.Image, error) {
	layerTar, err := singleFileTar(target[1:], data)
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
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	return img, nil
}

// singleFileTar is a layer with the file at path file and its parent
// directories, all owned by root, every timestamp the epoch.
func singleFileTar(file string, data []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var dirs []string
	for d := path.Dir(file); d != "."; d = path.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch()}); err != nil {
			return nil, fmt.Errorf("layer: %w", err)
		}
	}
	h := &tar.Header{Typeflag: tar.TypeReg, Name: file, Mode: 0o755, Size: int64(len(data)), ModTime: epoch()}
	if err := tw.WriteHeader(h); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	if _, err := tw.Write(data); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return buf.Bytes(), nil
}
