package dataplane

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// listenPair listens on the same port on two addresses, as a node port
// is the same on every node.
func listenPair(t *testing.T, a, b netip.Addr) (net.Listener, net.Listener, int) {
	t.Helper()
	for range 20 {
		la, err := net.Listen("tcp", net.JoinHostPort(a.String(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		port := la.Addr().(*net.TCPAddr).Port
		lb, err := net.Listen("tcp", net.JoinHostPort(b.String(), strconv.Itoa(port)))
		if err == nil {
			t.Cleanup(func() { _ = la.Close(); _ = lb.Close() })
			return la, lb, port
		}
		_ = la.Close()
	}
	t.Fatal("no port free on both addresses")
	return nil, nil, 0
}

func serveName(ln net.Listener, name string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte(name + "\n"))
		_ = c.Close()
	}
}

// healthServer answers /healthz with 200 while healthy, else 503, as
// kube-proxy's health check node port does for a node with or without a
// local endpoint; the connection itself is always accepted.
func healthServer(ln net.Listener, healthy *atomic.Bool) {
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		if healthy.Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})}
	_ = srv.Serve(ln)
}

// An HTTP health check takes a backend out on 503 although its health
// port accepts connections, and puts it back on 200.
func TestHTTPHealthCheckFollowsStatus(t *testing.T) {
	t.Parallel()
	_, ctx := ktesting.NewTestContext(t)
	m := NewManager(ctx)
	defer m.Close()
	a, b, vip := randomLoopback(2), randomLoopback(3), randomLoopback(0)
	svcA, svcB, nodePort := listenPair(t, a, b)
	hcA, hcB, hcPort := listenPair(t, a, b)
	var healthyA, healthyB atomic.Bool
	healthyA.Store(true)
	go serveName(svcA, "a")
	go serveName(svcB, "b")
	go healthServer(hcA, &healthyA)
	go healthServer(hcB, &healthyB)

	spec := Spec{
		ID: "lb-http", VIP: vip,
		Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: 8080, NodePort: nodePort}},
		Backends:  []Backend{{ID: "i-a", Address: a, Up: true}, {ID: "i-b", Address: b, Up: true}},
		HealthCheck: api.HealthCheck{Port: hcPort, Path: "/healthz", IntervalMs: 50, TimeoutMs: 200,
			HealthyThreshold: 1, UnhealthyThreshold: 1},
	}
	if err := m.Apply(spec); err != nil {
		t.Fatal(err)
	}
	vipAddr := net.JoinHostPort(vip.String(), "8080")
	waitOnly(t, vipAddr, "a")
	healthyA.Store(false)
	healthyB.Store(true)
	waitOnly(t, vipAddr, "b")
}

// waitOnly waits until ten connections in a row reach the backend named
// want.
func waitOnly(t *testing.T, addr, want string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		for range 10 {
			if got := dialName(addr); got != want {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("traffic to %s never went only to backend %s: %v", addr, want, err)
	}
}

func dialName(addr string) string {
	c, err := (&net.Dialer{Timeout: time.Second}).DialContext(context.Background(), "tcp", addr)
	if err != nil {
		return ""
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return ""
	}
	return line[:len(line)-1]
}
