// Package server is localcloud's HTTP/JSON API: instances, load balancers
// and route tables under /v1, bearer-token authentication, the realism
// knobs (latency, rate limit, injected faults, quotas, provisioning time)
// and per-operation request counters under /v1/admin, Prometheus text at
// /metrics. It owns the asynchronous load balancer lifecycle (timers that
// survive a restart because their deadlines are stored) and drives the
// data plane.
//
// Use it in-process from Go:
//
//	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", StateDir: dir})
//	if err := srv.Start(ctx); err != nil { ... }
//	defer srv.Close()
//	c, err := client.New(srv.URL(), srv.Token())
package server
