package apicheck

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"
)

// fixture type-checks src as the package pkg/demo of the module.
func fixture(t *testing.T, src string) API {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "demo.go", "package demo\n"+src, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := new(types.Config).Check(Module+"/pkg/demo", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return API{"pkg/demo": pkg}
}

const demoV1 = "func A() {}\ntype T struct{ X int }\n"

func TestMentions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"- `pkg/cloud`: EndpointTargeter", true},
		{"- pkg/cloud.EndpointTargeter is new.", true},
		{"pkg/cloud", true},
		{"(pkg/cloud)", true},
		{"- `pkg/cloud/fake`: a fake", false},
		{"- internal/pkg/cloud", false},
		{"- mypkg/cloud", false},
		{"- pkg/cloudy", false},
		{"", false},
	} {
		if got := Mentions(tc.text, "pkg/cloud"); got != tc.want {
			t.Errorf("Mentions(%q, pkg/cloud) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// TestUndeclared is the check's own test: a change the changelog does not
// declare fails, declared where the rule says it passes.
func TestUndeclared(t *testing.T) {
	t.Parallel()
	old := fixture(t, demoV1)
	added := fixture(t, demoV1+"func B() {}\n")
	removed := fixture(t, "type T struct{ X int }\n")
	const (
		none       = "## [Unreleased]\n"
		inAdded    = "## [Unreleased]\n\n### Added\n\n- `pkg/demo`: B.\n"
		inBreaking = "## [Unreleased]\n\n### Changed (API)\n\n- `pkg/demo`: A is gone.\n\n### Fixed\n\n- nothing\n"
		otherPkg   = "## [Unreleased]\n\n### Changed (API)\n\n- `pkg/demo/sub`: A is gone.\n"
	)
	for _, tc := range []struct {
		name       string
		base, cur  API
		unreleased string
		wantErr    string
	}{
		{"unchanged", old, old, none, ""},
		{"addition undeclared", old, added, none, "compatible API change not mentioned"},
		{"addition declared", old, added, inAdded, ""},
		{"addition declared as breaking", old, added, inBreaking, ""},
		{"removal undeclared", old, removed, none, "incompatible API change not declared"},
		{"removal declared outside Changed (API)", old, removed, inAdded, "incompatible API change not declared"},
		{"removal declared", old, removed, inBreaking, ""},
		{"another package declared", old, removed, otherPkg, "incompatible API change not declared"},
		{"package added undeclared", API{}, old, none, "compatible API change not mentioned"},
		{"package removed undeclared", old, API{}, none, "incompatible API change not declared"},
		{"package removed declared", old, API{}, inBreaking, ""},
	} {
		errs := Undeclared(Diff(tc.base, tc.cur), tc.unreleased)
		switch {
		case tc.wantErr == "" && len(errs) > 0:
			t.Errorf("%s: unexpected errors %v", tc.name, errs)
		case tc.wantErr != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.wantErr)):
			t.Errorf("%s: errors %v, want one containing %q", tc.name, errs, tc.wantErr)
		}
	}
}

func TestWriteRead(t *testing.T) {
	t.Parallel()
	api := fixture(t, demoV1)
	var a, b bytes.Buffer
	if err := Write(&a, api); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, api); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two records of one API differ")
	}
	back, err := Read(a.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(api, back); len(d) > 0 {
		t.Errorf("the API read back differs: %v", d)
	}
}

// TestRepositoryAPIChangesDeclared holds the tree's pkg/ API to the last
// release's record: every change since must be in CHANGELOG.md's
// Unreleased section (docs/versioning.md, "Go API").
func TestRepositoryAPIChangesDeclared(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	changes, undeclared, err := Check(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		t.Logf("%s changed since the last release (incompatible: %v)", c.Package, c.Incompatible())
	}
	for _, e := range undeclared {
		t.Error(e)
	}
}
