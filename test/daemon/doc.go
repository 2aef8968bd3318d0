// Package daemon holds whole-daemon tests: app.Run, configured as the
// command line would configure it, against a real kube-apiserver and an
// in-process localcloud. They prove the wiring (flags, controller table,
// metrics registry) that the controller packages' own tests bypass.
package daemon
