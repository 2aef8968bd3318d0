package release

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/stratus-ccm/stratus/hack/dist/image"
)

// WriteImage writes idx into dir as an OCI layout (dir/oci, its index
// entry named by ref's tag), a docker-archive per platform
// (dir/NAME-OS-ARCH.tar, tagged ref) and the index's digest (dir/digest).
func WriteImage(idx v1.ImageIndex, dir string, ref name.Tag) (v1.Hash, error) {
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image: %w", err)
	}
	p, err := layout.Write(filepath.Join(dir, "oci"), empty.Index)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image: layout: %w", err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
	})); err != nil {
		return v1.Hash{}, fmt.Errorf("image: layout: %w", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image: %w", err)
	}
	for _, d := range m.Manifests {
		img, err := image.PlatformImage(idx, d.Platform)
		if err != nil {
			return v1.Hash{}, err
		}
		file := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.tar", filepath.Base(ref.RepositoryStr()), d.Platform.OS, d.Platform.Architecture))
		if err := tarball.WriteToFile(file, ref, img); err != nil {
			return v1.Hash{}, fmt.Errorf("image: %s: %w", file, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "digest"), []byte(digest.String()+"\n"), 0o644); err != nil { //nolint:gosec // a public digest
		return v1.Hash{}, fmt.Errorf("image: %w", err)
	}
	return digest, nil
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil { //nolint:gosec // a published artefact
		return err
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

func hostArch() string { return runtime.GOARCH }
