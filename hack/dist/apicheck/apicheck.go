// Package apicheck holds the exported Go API of the main module's pkg/ tree
// to the changelog: it records the API of a release as export data (the
// form golang.org/x/exp/apidiff compares), compares the tree against the
// last release's record with apidiff, and reports every changed package the
// changelog's Unreleased section does not declare (docs/versioning.md says
// the rule).
package apicheck

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"golang.org/x/exp/apidiff"
	"golang.org/x/tools/go/gcexportdata"
	"golang.org/x/tools/go/packages"
)

// Module is the main module's path; API keys are relative to it.
const Module = "github.com/stratus-ccm/stratus"

// Pattern is the part of the module whose API is public: pkg/ (internal/
// and cmd/ cannot be imported from another module).
const Pattern = "./pkg/..."

// API is the exported API of some packages, by module-relative path
// ("pkg/cloud").
type API map[string]*types.Package

// Load type-checks the packages of Pattern in the module at dir. It builds
// as bin/stratus is built (static, -trimpath), so that go list reuses the
// packages make build compiled.
func Load(ctx context.Context, dir string) (API, error) {
	cfg := &packages.Config{
		Context:    ctx,
		Dir:        dir,
		Mode:       packages.NeedName | packages.NeedTypes,
		BuildFlags: []string{"-trimpath"},
		Env:        append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly"),
	}
	pkgs, err := packages.Load(cfg, Pattern)
	if err != nil {
		return nil, fmt.Errorf("apicheck: load %s in %s: %w", Pattern, dir, err)
	}
	api := API{}
	var errs []error
	for _, p := range pkgs {
		for _, e := range p.Errors {
			errs = append(errs, fmt.Errorf("apicheck: %s: %w", p.PkgPath, e))
		}
		rel, ok := relative(p.PkgPath)
		if !ok || p.Types == nil {
			continue
		}
		api[rel] = p.Types
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(api) == 0 {
		return nil, fmt.Errorf("apicheck: no packages match %s in %s", Pattern, dir)
	}
	return api, nil
}

// relative is path relative to Module, false for a path outside it or an
// internal package (which no other module can import).
func relative(path string) (string, bool) {
	rel, ok := strings.CutPrefix(path, Module+"/")
	if !ok || rel == "internal" || strings.HasPrefix(rel, "internal/") || strings.Contains(rel, "/internal/") || strings.HasSuffix(rel, "/internal") {
		return "", false
	}
	return rel, true
}

// Write records api in the file format of apidiff's own -m -w (a zip whose
// entry "module" holds the module path and each other entry, named by a
// package's import path plus ".x", its export data), so that the stock
// command reads it too: apidiff -m FILE github.com/stratus-ccm/stratus.
// Entries are sorted and carry no timestamp: the same API gives the same
// bytes.
func Write(w io.Writer, api API) error {
	zw := zip.NewWriter(w)
	e, err := zw.CreateHeader(&zip.FileHeader{Name: "module", Method: zip.Deflate})
	if err != nil {
		return fmt.Errorf("apicheck: %w", err)
	}
	if _, err := io.WriteString(e, Module); err != nil {
		return fmt.Errorf("apicheck: %w", err)
	}
	fset := token.NewFileSet()
	for _, rel := range slices.Sorted(maps.Keys(api)) {
		e, err := zw.CreateHeader(&zip.FileHeader{Name: Module + "/" + rel + ".x", Method: zip.Deflate})
		if err != nil {
			return fmt.Errorf("apicheck: %s: %w", rel, err)
		}
		if err := gcexportdata.Write(e, fset, api[rel]); err != nil {
			return fmt.Errorf("apicheck: export data of %s: %w", rel, err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("apicheck: %w", err)
	}
	return nil
}

// Read reads what Write wrote. Each package's export data carries the
// parts of its dependencies it refers to, so each is read on its own.
func Read(data []byte) (API, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("apicheck: %w", err)
	}
	fset := token.NewFileSet()
	api := API{}
	for _, f := range zr.File {
		if f.Name == "module" {
			continue
		}
		path, ok := strings.CutSuffix(f.Name, ".x")
		rel, inModule := relative(path)
		if !ok || !inModule {
			return nil, fmt.Errorf("apicheck: unexpected entry %q", f.Name)
		}
		r, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("apicheck: %s: %w", rel, err)
		}
		pkg, err := gcexportdata.Read(r, fset, map[string]*types.Package{}, path)
		_ = r.Close()
		if err != nil {
			return nil, fmt.Errorf("apicheck: %s: %w", rel, err)
		}
		api[rel] = pkg
	}
	return api, nil
}

// Change is apidiff's report on one package: added or removed as a whole,
// or its compatible and incompatible changes.
type Change struct {
	// Package is the module-relative path.
	Package string
	// Changes are apidiff's messages.
	Changes []apidiff.Change
}

// Incompatible says whether any change breaks a user of the package.
func (c Change) Incompatible() bool {
	return slices.ContainsFunc(c.Changes, func(ch apidiff.Change) bool { return !ch.Compatible })
}

// Diff compares old with cur package by package, sorted by path; packages
// with no change are left out.
func Diff(old, cur API) []Change {
	paths := slices.Sorted(maps.Keys(old))
	for p := range cur {
		if _, ok := old[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var out []Change
	for _, p := range paths {
		o, n := old[p], cur[p]
		var chs []apidiff.Change
		switch {
		case n == nil:
			chs = []apidiff.Change{{Message: "package removed", Compatible: false}}
		case o == nil:
			chs = []apidiff.Change{{Message: "package added", Compatible: true}}
		default:
			chs = apidiff.Changes(o, n).Changes
		}
		if len(chs) > 0 {
			out = append(out, Change{Package: p, Changes: chs})
		}
	}
	return out
}
