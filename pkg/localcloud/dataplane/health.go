package dataplane

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/stratus-ccm/stratus/internal/netns"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// maxParallelProbes bounds the sockets one health check round opens, so a
// load balancer with thousands of backends does not exhaust descriptors.
const maxParallelProbes = 64

type healthState struct {
	healthy bool
	probed  bool
	succ    int
	fail    int
}

// record applies one probe result. The first result decides at once, so a
// new load balancer neither waits thresholds*interval for traffic nor keeps
// sending to a dead backend for that long; later results need thresholds.
func (h *healthState) record(ok bool, hc api.HealthCheck) bool {
	before := h.healthy
	if !h.probed {
		h.probed = true
		h.healthy = ok
		return before != h.healthy
	}
	if ok {
		h.succ++
		h.fail = 0
		if !h.healthy && h.succ >= hc.HealthyThreshold {
			h.healthy = true
		}
	} else {
		h.fail++
		h.succ = 0
		if h.healthy && h.fail >= hc.UnhealthyThreshold {
			h.healthy = false
		}
	}
	return before != h.healthy
}

// probePort is the node port the health check dials: the configured one,
// else the first TCP listener's. Zero means backends are not probed.
func (s Spec) probePort() int {
	if s.HealthCheck.Port != 0 {
		return s.HealthCheck.Port
	}
	for _, l := range s.Listeners {
		if l.Protocol == api.ProtocolTCP {
			return l.NodePort
		}
	}
	return 0
}

// probeTarget is one address:port the health check dials, and the key
// of its health state: an instance's id, or an endpoint's address:port.
type probeTarget struct {
	key  string
	addr netip.Addr
	port int
}

// probeTargets are what the health check dials: each running backend on
// the probe port, or, with endpoint targets, each endpoint of a TCP
// listener that may get connections (ready or serving) on its own port.
// A UDP endpoint cannot be probed: it follows its address' TCP endpoints
// (udpFollows).
func (s Spec) probeTargets() []probeTarget {
	var out []probeTarget
	if s.EndpointTargets {
		seen := map[string]bool{}
		for _, l := range s.Listeners {
			if l.Protocol != api.ProtocolTCP {
				continue
			}
			for _, e := range l.Endpoints {
				a, err := netip.ParseAddr(e.Address)
				if k := e.AddrPort(); err == nil && (e.Ready || e.Serving) && !seen[k] {
					seen[k] = true
					out = append(out, probeTarget{key: k, addr: a, port: e.Port})
				}
			}
		}
		return out
	}
	port := s.probePort()
	if port == 0 {
		return nil
	}
	for _, b := range s.Backends {
		if b.Up {
			out = append(out, probeTarget{key: b.ID, addr: b.Address, port: port})
		}
	}
	return out
}

// syncHealthStateLocked keeps the state of retained backends and starts new
// ones as healthy-until-probed. Without a probe port every backend counts
// as healthy, since nothing could prove otherwise. Endpoint targets have a
// state for each endpoint probed.
func (lb *loadBalancer) syncHealthStateLocked() {
	keep := map[string]bool{}
	if lb.spec.EndpointTargets {
		for _, p := range lb.spec.probeTargets() {
			keep[p.key] = true
			if _, ok := lb.hstate[p.key]; !ok {
				lb.hstate[p.key] = &healthState{healthy: true}
			}
		}
	}
	probe := lb.spec.probePort() != 0
	for _, b := range lb.spec.Backends {
		keep[b.ID] = true
		h, ok := lb.hstate[b.ID]
		if !ok {
			h = &healthState{healthy: true}
			lb.hstate[b.ID] = h
		}
		if !probe {
			*h = healthState{healthy: true}
		}
	}
	for id := range lb.hstate {
		if !keep[id] {
			delete(lb.hstate, id)
		}
	}
}

func (lb *loadBalancer) startCheckerLocked() {
	targets := lb.spec.probeTargets()
	if len(targets) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(lb.ctx)
	done := make(chan struct{})
	lb.stopCheck, lb.checkDone = cancel, done
	hc := lb.spec.HealthCheck
	go func() {
		defer close(done)
		interval := time.Duration(hc.IntervalMs) * time.Millisecond
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			lb.probeRound(ctx, targets, hc)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// stopChecker stops the health check goroutine and waits for it; it must be
// called without lb.mu held because the checker takes it to record results.
func (lb *loadBalancer) stopChecker() {
	lb.mu.Lock()
	cancel, done := lb.stopCheck, lb.checkDone
	lb.stopCheck, lb.checkDone = nil, nil
	lb.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (lb *loadBalancer) probeRound(ctx context.Context, targets []probeTarget, hc api.HealthCheck) {
	timeout := time.Duration(hc.TimeoutMs) * time.Millisecond
	results := make(map[string]bool, len(targets))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallelProbes)
	for _, b := range targets {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ok := probe(ctx, lb.sockets, b.addr, b.port, hc.Path, timeout)
			mu.Lock()
			results[b.key] = ok
			mu.Unlock()
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		// A cancelled round says nothing about the backends.
		return
	}
	lb.mu.Lock()
	defer lb.mu.Unlock()
	changed := false
	for id, ok := range results {
		if h := lb.hstate[id]; h != nil && h.record(ok, lb.spec.HealthCheck) {
			changed = true
			lb.log.V(2).Info("Backend health changed", "backend", id, "healthy", h.healthy)
		}
	}
	if changed {
		lb.publishLocked()
	}
}

// probe dials addr:port; with a path it asks for it over HTTP and wants
// 200, since kube-proxy's health servers accept every connection and
// answer 503 where the node must get no traffic.
func probe(ctx context.Context, sockets netns.Sockets, addr netip.Addr, port int, path string, timeout time.Duration) bool {
	hostPort := net.JoinHostPort(addr.String(), strconv.Itoa(port))
	if path != "" {
		return probeHTTP(ctx, sockets, "http://"+hostPort+path, timeout)
	}
	c, err := sockets.DialContext(ctx, &net.Dialer{Timeout: timeout}, "tcp", hostPort)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

func probeHTTP(ctx context.Context, sockets netns.Sockets, url string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	// One connection per probe, closed after it: a backend's health is
	// its answer now, not that of a kept-alive connection.
	// Dialed from the data plane's namespace, as a cloud's checker sits
	// in the VPC.
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return sockets.DialContext(ctx, &net.Dialer{}, network, addr)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil, DialContext: dial},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
