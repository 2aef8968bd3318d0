package e2e

import (
	"os"
	"strings"
	"testing"
)

// TestConformanceModuleMatchesTools wants hack/conformance to require every
// module it shares with hack/tools at hack/tools' version. The Makefile
// builds e2e.test and agnhost after the test bed's programs so that they
// reuse the packages those compiled; one module at another version (a
// golang.org/x/net, say) gives every package above it a new build ID and
// costs a cold CI run minutes of compiling Kubernetes again.
func TestConformanceModuleMatchesTools(t *testing.T) {
	tools := requirements(t, "../../hack/tools/go.mod")
	conformance := requirements(t, "../../hack/conformance/go.mod")
	shared := 0
	for path, v := range conformance {
		tv, ok := tools[path]
		if !ok {
			continue
		}
		shared++
		if v != tv {
			t.Errorf("hack/conformance requires %s %s, hack/tools %s: run `go get %s@%s` in hack/conformance (or raise hack/tools)",
				path, v, tv, path, tv)
		}
	}
	if shared < 100 {
		t.Errorf("hack/conformance and hack/tools share %d modules; both build k8s.io/kubernetes and should share hundreds", shared)
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
