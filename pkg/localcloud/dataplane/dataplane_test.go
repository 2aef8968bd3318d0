package dataplane

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

func randomLoopback(third int) netip.Addr {
	return netip.MustParseAddr(fmt.Sprintf("127.%d.%d.%d", third, 10+rand.IntN(240), 1+rand.IntN(250)))
}

func TestUDPIdleTimeoutAndClose(t *testing.T) {
	t.Parallel()
	_, ctx := ktesting.NewTestContext(t)
	m := NewManager(ctx)
	backendIP, vip := randomLoopback(1), randomLoopback(0)
	be, err := net.ListenUDP("udp", &net.UDPAddr{IP: backendIP.AsSlice()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = be.Close() }()
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := be.ReadFromUDP(buf)
			if err != nil {
				return
			}
			_, _ = be.WriteToUDP(buf[:n], from)
		}
	}()
	port := be.LocalAddr().(*net.UDPAddr).Port
	spec := Spec{
		ID: "lb-1", VIP: vip, UDPIdleTimeout: 100 * time.Millisecond,
		Listeners: []api.Listener{{Protocol: api.ProtocolUDP, Port: 9053, NodePort: port}},
		Backends:  []Backend{{ID: "i-1", Address: backendIP, Up: true}},
	}
	if err := m.Apply(spec); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: vip.AsSlice(), Port: 9053})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "hi" {
		t.Fatalf("echo: %v %q", err, buf[:n])
	}
	l := m.lbs["lb-1"].listeners[listenerKey{vip, api.ProtocolUDP, 9053}].(*udpListener)
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.flows) == 0, nil
	})
	if err != nil {
		t.Fatalf("idle UDP flow not ended: %v", err)
	}
	// The flow is re-opened transparently for the next datagram.
	if _, err := c.Write([]byte("again")); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "again" {
		t.Fatalf("after idle: %v", err)
	}
	m.Close()
	// Every socket is released: the VIP port can be bound again.
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: vip.AsSlice(), Port: 9053})
	if err != nil {
		t.Fatalf("VIP still bound after Close: %v", err)
	}
	_ = pc.Close()
	if err := m.Apply(spec); err == nil {
		t.Fatal("Apply after Close accepted")
	}
}

func TestHealthStateThresholds(t *testing.T) {
	t.Parallel()
	hc := api.HealthCheck{HealthyThreshold: 2, UnhealthyThreshold: 3}
	h := &healthState{healthy: true}
	if h.record(false, hc); h.healthy {
		t.Fatal("first failed probe must take the backend out at once")
	}
	h.record(true, hc)
	if h.healthy {
		t.Fatal("one success below the healthy threshold")
	}
	h.record(true, hc)
	if !h.healthy {
		t.Fatal("two successes reach the healthy threshold")
	}
	h.record(false, hc)
	h.record(false, hc)
	if !h.healthy {
		t.Fatal("two failures are below the unhealthy threshold of 3")
	}
	h.record(false, hc)
	if h.healthy {
		t.Fatal("three failures reach the unhealthy threshold")
	}
}
