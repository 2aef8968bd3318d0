// Package localcloud is the root of the embedded default cloud: a small
// cloud that runs on one machine, serves a versioned HTTP/JSON API with
// persistent state, behaves like a real cloud (latency, asynchronous
// provisioning, rate limits, quotas, injected faults) and runs a real L4
// data plane on loopback.
//
// The pieces live in sub-packages:
//
//   - api: the wire types, error codes and input validation shared by the
//     server and the client;
//   - store: persistence in bbolt with an in-memory index;
//   - dataplane: TCP/UDP forwarding from load balancer VIPs to backends,
//     with health checks and source-range filtering;
//   - server: the HTTP API, admin endpoints, realism knobs and counters;
//   - client: the Go client used by the provider, the CLI and tests;
//   - cli: the `stratus localcloud` command.
package localcloud
