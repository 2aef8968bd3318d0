package image

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The non-root user the image runs as (distroless' "nonroot").
const (
	UID      = 65532
	UserName = "nonroot"
)

// CABundlePath is where the CA bundle goes; Go's crypto/x509 reads it there
// on Linux, as do most other TLS stacks.
const CABundlePath = "etc/ssl/certs/ca-certificates.crt"

// file is one regular file, directory or symlink of a layer.
type file struct {
	name     string
	mode     int64
	data     []byte
	linkname string
	dir      bool
	owner    int // uid and gid; 0 (root) unless set
}

// tarLayer writes files as an OCI layer: sorted by name, owned by root
// unless a file says otherwise,
// every timestamp set to mtime, no user or group names, so equal inputs give equal digests.
func tarLayer(files []file, mtime time.Time) (v1.Layer, error) {
	files = withParents(files)
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, ModTime: mtime, Uid: f.owner, Gid: f.owner, Format: tar.FormatPAX,
		}
		switch {
		case f.dir:
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		case f.linkname != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.linkname
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return l, nil
}

// withParents adds a directory entry (0755) for every parent of files that
// lacks one, as container runtimes expect.
func withParents(files []file) []file {
	have := map[string]bool{}
	for _, f := range files {
		have[f.name] = true
	}
	out := append([]file(nil), files...)
	for _, f := range files {
		for dir := parent(f.name); dir != ""; dir = parent(dir) {
			if !have[dir] {
				have[dir] = true
				out = append(out, file{name: dir, mode: 0o755, dir: true})
			}
		}
	}
	return out
}

func parent(name string) string {
	for i := len(name) - 1; i > 0; i-- {
		if name[i] == '/' {
			return name[:i]
		}
	}
	return ""
}

// baseFiles are the files every image holds besides the binary.
func baseFiles() []file {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/home/%s:/sbin/nologin\n", UserName, UID, UID, UserName, UserName)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", UserName, UID)
	return []file{
		{name: CABundlePath, mode: 0o644, data: caBundle()},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "home/" + UserName, mode: 0o700, dir: true, owner: UID},
		// A writable /tmp would need a volume anyway (the root file system
		// is read-only in the chart); the directory keeps tools that
		// expect it from failing on a missing path.
		{name: "tmp", mode: 0o1777, dir: true},
	}
}

// caBundle is the NSS root store as PEM. Roots that carry a constraint PEM
// cannot express (a distrust-after date) are left out: a TLS stack reading
// the file would trust them without the constraint.
func caBundle() []byte {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes()
}
