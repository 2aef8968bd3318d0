// Package harness starts and measures the real processes a benchmark run
// needs: etcd and kube-apiserver (envtest), kwok, `stratus localcloud
// serve`, and the contestant controller managers. It reads CPU time and
// peak RSS from /proc and client request counts from a manager's /metrics.
//
// The start logic mirrors internal/testenv and internal/sandbox, which a
// separate module cannot import; kwok-stages.yaml is a copy of the test
// bed's stage file.
package harness
