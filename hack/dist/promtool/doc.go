// Package promtool is promtool's rule unit testing (`promtool test rules`)
// as a library: Prometheus ships it only inside its command's main
// package, and building the whole promtool would pull every service
// discovery plugin (and its cloud SDKs) into this module. unittest.go is
// that file of the Prometheus version in go.mod, copied unchanged but for
// its package clause (go generate refreshes it after a version bump), so
// the rules are tested with exactly promtool's semantics and file format.
package promtool

//go:generate sh -c "sed 's/^package main$/package promtool/' \"$(go list -m -f '{{.Dir}}' github.com/prometheus/prometheus)/cmd/promtool/unittest.go\" | { printf '// Code generated from github.com/prometheus/prometheus/cmd/promtool/unittest.go (Apache License 2.0) by go generate; DO NOT EDIT.\\n\\n'; cat; } > unittest.go"
