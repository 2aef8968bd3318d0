// Package harness starts and measures the real processes a benchmark run
// needs: etcd and kube-apiserver (localcluster's control plane), kwok, `stratus localcloud
// serve`, and the contestant controller managers. It reads CPU time and
// peak RSS from /proc and client request counts from a manager's /metrics.
//
// kwok (its stages and flags), the kubeconfig and the Node objects come
// from the project's test bed, pkg/testbed, so that the benchmark's fake
// kubelets are the tests'. What is bench-specific stays here: an apiserver
// with a /16 service range and raised in-flight limits for hundreds of
// Services, localcloud with room for thousands of instances and load
// balancers, and the contestants' processes, whose CPU and RSS are read
// from /proc.
package harness
