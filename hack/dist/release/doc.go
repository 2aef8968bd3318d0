// Package release cuts a Stratus release (make release): it checks the
// version and the changelog, then builds, from the commit alone, the
// multi-platform image, the binaries, the versioned chart, the manifests
// pinned by the image's digest, the bill of materials, the release notes and
// the checksums of all of them, each byte a function of the commit so that
// two runs agree.
package release
