// Package leader owns leader election as the daemon runs it: the Lease
// lock wrapper that observes its requests (readiness and liveness per
// replica) and takes an expired Lease at once, the watch that dates each
// renewal, the tracker that follows a replica from standby to leader
// (informers started before winning, metrics of the takeover), the
// standby's cache warmer fed the Lease as the lock sees it (NewWarmer, over
// internal/standby), and the second lease of upstream's leader migration.
// The wiring package (internal/app) builds the lock, the tracker and the
// cache warmer and hands the lock to the manager; serving reads the lock
// for /readyz, /livez and /debug/explain. It knows no controller: the
// kinds to fill come from the controller table.
package leader
