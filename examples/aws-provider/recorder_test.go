package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/conformance"
)

// recorder is a conformance.T that records each check's failures instead
// of failing the test, and logs them, so that a test can assert exactly
// which checks AWS' provider fails and why.
type recorder struct {
	t    *testing.T
	path string
	root *recording
}

type recording struct {
	mu       sync.Mutex
	failures map[string][]string // check path → messages
}

func newRecorder(t *testing.T) *recorder {
	return &recorder{t: t, root: &recording{failures: map[string][]string{}}}
}

func (r *recorder) Helper() {}

func (r *recorder) Logf(format string, args ...any) { r.t.Logf(format, args...) }

func (r *recorder) Errorf(format string, args ...any) {
	r.root.mu.Lock()
	defer r.root.mu.Unlock()
	r.t.Logf("%s flagged: "+format, append([]any{r.path}, args...)...)
	r.root.failures[r.path] = append(r.root.failures[r.path], fmt.Sprintf(format, args...))
}

func (r *recorder) Run(name string, f func(conformance.T)) bool {
	path := name
	if r.path != "" {
		path = r.path + "/" + name
	}
	f(&recorder{t: r.t, path: path, root: r.root})
	r.root.mu.Lock()
	defer r.root.mu.Unlock()
	for p := range r.root.failures {
		if p == path || strings.HasPrefix(p, path+"/") {
			return false
		}
	}
	return true
}

// flagged lists the checks that failed, sorted.
func (r *recorder) flagged() []string {
	r.root.mu.Lock()
	defer r.root.mu.Unlock()
	return slices.Sorted(maps.Keys(r.root.failures))
}

// message is everything a check failed with.
func (r *recorder) message(check string) string {
	r.root.mu.Lock()
	defer r.root.mu.Unlock()
	return strings.Join(r.root.failures[check], "\n")
}
