// Package daemon holds whole-daemon tests: app.Run, configured as the
// command line would configure it, against a real kube-apiserver and an
// in-process localcloud. They prove the wiring (flags, controller table,
// metrics registry) that the controller packages' own tests bypass.
//
// Every daemon here gets its own metrics registry, so values are read as
// they are, never as differences. The tests run the daemon many times in
// one process (restarts, replicas side by side), so each run sets
// app.Deps.SkipControllerNameValidation; the stratus binary keeps
// controller-runtime's check.
package daemon
