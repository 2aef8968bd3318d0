// Package faults is the fault suite: Stratus, localcloud and a control
// plane run as real processes (bin/stratus, bin/kube-apiserver, bin/etcd)
// over real sockets, and each scenario attacks them the way an operator's
// worst day would (slow provisioning with deletes in flight, a 429 storm,
// a 100% 5xx outage, SIGKILLs of Stratus, of its leader with a standby
// waiting, of kube-apiserver and of etcd, load balancers changed behind
// Stratus' back). After every fault clears, the scenario waits for the
// invariants (see invariants_test.go) and logs the time they took as a
// "fault-converged" line; docs/reliability.md quotes those figures.
//
// The scenarios share one world (control plane, cloud, Stratus replicas)
// and run in sequence, each in its own namespace: every fault here is
// global to the world, so running two at once would blur what each one
// proves.
package faults
