package e2e

import (
	"os"
	"strings"
	"testing"
)

// TestModulesMatchTools wants the modules that build against hack/tools'
// packages to require every module they share with hack/tools at hack/tools'
// version: hack/conformance (e2e.test and agnhost), and this module, whose
// version bench/ (the upstream peer), go vet and the linters compile with.
// The Makefile builds those after the test bed's programs so that they
// reuse the packages those compiled; one module at another version (a
// golang.org/x/net, say) gives every package above it a new build ID and
// costs a cold CI run minutes of compiling Kubernetes' libraries again.
func TestModulesMatchTools(t *testing.T) {
	tools := requirements(t, "../../hack/tools/go.mod")
	for _, m := range []struct {
		name, gomod string
		minShared   int
	}{
		// Both build k8s.io/kubernetes: they share hundreds.
		{"hack/conformance", "../../hack/conformance/go.mod", 100},
		// client-go, the API types, component-base and what they import.
		{"the main module", "../../go.mod", 40},
	} {
		shared := 0
		for path, v := range requirements(t, m.gomod) {
			tv, ok := tools[path]
			if !ok {
				continue
			}
			shared++
			if v != tv {
				t.Errorf("%s requires %s %s, hack/tools %s: run `go get %s@%s` in %s (or raise hack/tools)",
					m.name, path, v, tv, path, tv, m.name)
			}
		}
		if shared < m.minShared {
			t.Errorf("%s and hack/tools share %d modules, want at least %d: both build Kubernetes' libraries", m.name, shared, m.minShared)
		}
	}
}

// requirements reads the module versions a go.mod written by go mod tidy
// requires, a replacement's version in place of the required one. A plain
// scan of that format keeps golang.org/x/mod out of this module.
func requirements(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	required, replaced := map[string]string{}, map[string]string{}
	block := "" // "require" or "replace" inside a parenthesized block
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.SplitN(line, "//", 2)[0])
		if len(f) == 0 {
			continue
		}
		if f[0] == ")" {
			block = ""
			continue
		}
		kind := block
		if kind == "" {
			kind, f = f[0], f[1:]
			if len(f) == 1 && f[0] == "(" {
				block = kind
				continue
			}
		}
		switch {
		case kind == "require" && len(f) == 2:
			required[f[0]] = f[1]
		case kind == "replace" && len(f) == 4 && f[1] == "=>":
			replaced[f[0]] = f[3] // path => path version; a local directory has no version
		}
	}
	for path, v := range replaced {
		if _, ok := required[path]; ok {
			required[path] = v
		}
	}
	if len(required) == 0 {
		t.Fatalf("%s requires no module", file)
	}
	return required
}
