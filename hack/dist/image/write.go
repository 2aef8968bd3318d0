package image

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Outputs are the files Write produced.
type Outputs struct {
	// Layout is an OCI image layout directory; its index.json has one
	// entry, the multi-platform index, named by the tag
	// (org.opencontainers.image.ref.name), as `skopeo copy oci:DIR:TAG`
	// and `crane push` expect.
	Layout string
	// Tarball is a docker-archive of the TarballPlatform image, tagged
	// with the reference, for `docker load` and `podman load`.
	Tarball string
	// Digest is the multi-platform index's digest.
	Digest v1.Hash
}

// Write writes idx as an OCI layout under dir/oci and the image of
// platform as dir/NAME-OS-ARCH.tar, tagged ref.
func Write(idx v1.ImageIndex, dir string, ref name.Tag, platform string) (Outputs, error) {
	var out Outputs
	plat, err := v1.ParsePlatform(platform)
	if err != nil {
		return out, fmt.Errorf("image: tarball platform %q: %w", platform, err)
	}
	if out.Digest, err = idx.Digest(); err != nil {
		return out, fmt.Errorf("image: %w", err)
	}
	out.Layout = filepath.Join(dir, "oci")
	// A fresh layout each time: an old one would keep the previous
	// build's entry next to this one.
	if err := os.RemoveAll(out.Layout); err != nil {
		return out, fmt.Errorf("image: %w", err)
	}
	p, err := layout.Write(out.Layout, empty.Index)
	if err != nil {
		return out, fmt.Errorf("image: layout %s: %w", out.Layout, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
	})); err != nil {
		return out, fmt.Errorf("image: layout %s: %w", out.Layout, err)
	}
	img, err := PlatformImage(idx, plat)
	if err != nil {
		return out, err
	}
	out.Tarball = filepath.Join(dir, fmt.Sprintf("%s-%s-%s.tar", filepath.Base(ref.RepositoryStr()), plat.OS, plat.Architecture))
	if err := tarball.WriteToFile(out.Tarball, ref, img); err != nil {
		return out, fmt.Errorf("image: tarball %s: %w", out.Tarball, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "digest"), []byte(out.Digest.String()+"\n"), 0o644); err != nil { //nolint:gosec // a public digest
		return out, fmt.Errorf("image: %w", err)
	}
	return out, nil
}

// PlatformImage returns idx's image for plat.
func PlatformImage(idx v1.ImageIndex, plat *v1.Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.Satisfies(*plat) {
			img, err := idx.Image(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("image: %s: %w", plat, err)
			}
			return img, nil
		}
	}
	return nil, fmt.Errorf("image: the index has no image for %s", plat)
}
