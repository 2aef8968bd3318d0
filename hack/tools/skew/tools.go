//go:build tools

// Package tools pins the kube-apiserver of the oldest Kubernetes minor the
// version-skew policy supports (docs/providers.md, "Kubernetes versions"),
// which the skew test runs Stratus against. It is a module of its own so
// that the test bed's current kube-apiserver (hack/tools) and this one
// each keep their exact k8s.io versions.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
