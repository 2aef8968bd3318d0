// Package image builds the OCI image of a Go program without a container
// engine: it cross-compiles a static binary (CGO_ENABLED=0, -trimpath) for
// each platform and assembles, with go-containerregistry, an image from an
// empty base holding only the binary, a CA bundle (the Mozilla roots of
// golang.org/x/crypto/x509roots/fallback, pinned in go.mod) and the
// passwd/group entries of the non-root user 65532. No shell, no package
// manager.
//
// The build is reproducible: every timestamp is the commit's, tar entries
// are sorted with fixed owners and modes, and the Go build flags strip
// paths and build IDs, so two builds of one commit give one digest.
//
// Build writes an OCI image layout whose index.json names a multi-platform
// index, and a docker-archive tarball of one platform's image that
// `docker load` and `podman load` accept.
package image
