// Package app is the controller manager's wiring: Run turns the options
// (internal/app/options) into a controller-runtime manager with the
// observed Lease lock and leadership tracker (internal/app/leader), the
// secure port (internal/app/serving), the instrumented cloud, and a
// leader-only runnable that starts the controllers of the controller table
// (table.go: one entry per controller, wire_*.go: its start function).
// It also builds each controller's API identity (identity.go, satoken.go)
// and the client builder providers are initialized with. pkg/ccm, the
// public entry point, and the whole-daemon tests in test/daemon use it;
// nothing below it imports it.
package app
