package apicheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratus-ccm/stratus/hack/dist/release"
)

// BaselineDir is where, relative to the repository's root, the API of the
// last release is recorded, as VERSION.zip.
const BaselineDir = "hack/release/api"

// Baseline returns the one record in dir and the release it records.
// There is one: recording a release replaces the previous one, whose
// record stays in git's history.
func Baseline(dir string) (path, version string, err error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.zip"))
	if err != nil {
		return "", "", fmt.Errorf("apicheck: %w", err)
	}
	if len(matches) != 1 {
		return "", "", fmt.Errorf("apicheck: want one release's API record (VERSION.zip) in %s, found %d", dir, len(matches))
	}
	version = strings.TrimSuffix(filepath.Base(matches[0]), ".zip")
	if _, err := release.ParseVersion(version); err != nil {
		return "", "", fmt.Errorf("apicheck: %s: %w", matches[0], err)
	}
	return matches[0], version, nil
}

// Record writes the API of commit rev of the repository at root as
// root/BaselineDir/VERSION.zip and removes the previous release's record.
// It loads the API from the commit alone (git archive), never from
// uncommitted edits in the work tree.
func Record(ctx context.Context, root, rev, version string) (string, error) {
	if _, err := release.ParseVersion(version); err != nil {
		return "", fmt.Errorf("apicheck: %w", err)
	}
	c, err := release.ResolveCommit(ctx, root, rev)
	if err != nil {
		return "", fmt.Errorf("apicheck: %w", err)
	}
	src, err := os.MkdirTemp("", "stratus-api-")
	if err != nil {
		return "", fmt.Errorf("apicheck: %w", err)
	}
	defer func() { _ = os.RemoveAll(src) }()
	if err := release.Export(ctx, root, c.Hash, src); err != nil {
		return "", fmt.Errorf("apicheck: %w", err)
	}
	api, err := Load(ctx, src)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, BaselineDir)
	old, _ := filepath.Glob(filepath.Join(dir, "*.zip"))
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // checked-in sources are world-readable
		return "", fmt.Errorf("apicheck: %w", err)
	}
	path := filepath.Join(dir, version+".zip")
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("apicheck: %w", err)
	}
	err = Write(f, api)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("apicheck: %w", cerr)
	}
	if err != nil {
		return "", err
	}
	for _, o := range old {
		if o != path {
			if err := os.Remove(o); err != nil {
				return "", fmt.Errorf("apicheck: %w", err)
			}
		}
	}
	return path, nil
}

// Check compares the tree at root with its recorded baseline and returns
// the changes and the errors for those CHANGELOG.md's Unreleased section
// does not declare.
func Check(ctx context.Context, root string) (changes []Change, undeclared []error, err error) {
	path, _, err := Baseline(filepath.Join(root, BaselineDir))
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("apicheck: %w", err)
	}
	old, err := Read(data)
	if err != nil {
		return nil, nil, err
	}
	cur, err := Load(ctx, root)
	if err != nil {
		return nil, nil, err
	}
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return nil, nil, fmt.Errorf("apicheck: %w", err)
	}
	unreleased, err := release.Section(changelog, release.Unreleased)
	if err != nil {
		return nil, nil, fmt.Errorf("apicheck: %w", err)
	}
	changes = Diff(old, cur)
	return changes, Undeclared(changes, unreleased), nil
}
