//go:build tools

// Package conformance pins Kubernetes' end-to-end test suite, which `make
// conformance` compiles into bin/e2e.test (go test -c of
// k8s.io/kubernetes/test/e2e at the version go.mod records) and runs
// against the sandbox's real nodes, and the agnhost test image's program
// (k8s.io/kubernetes/test/images/agnhost), which the specs run in pods.
package conformance

import (
	_ "k8s.io/kubernetes/test/e2e"
	_ "k8s.io/kubernetes/test/images/agnhost"
)
