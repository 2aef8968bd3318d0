package dataplane

import (
	"bufio"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// With client affinity every connection of one client reaches the same
// backend; without, connections spread over both.
func TestClientAffinity(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	m := NewManager(ctx)
	defer m.Close()
	port := 0
	var backends []Backend
	for i := range 2 {
		ip := randomLoopback(3)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		port = ln.Addr().(*net.TCPAddr).Port
		id := "i-" + strconv.Itoa(i)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte(id + "\n"))
				_ = c.Close()
			}
		}()
		backends = append(backends, Backend{ID: id, Address: ip, Up: true})
	}
	vip := randomLoopback(0)
	seen := func() map[string]int {
		out := map[string]int{}
		for range 10 {
			c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", netip.AddrPortFrom(vip, 80).String())
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			line, err := bufio.NewReader(c).ReadString('\n')
			_ = c.Close()
			if err != nil {
				t.Fatal(err)
			}
			out[line]++
		}
		return out
	}
	spec := Spec{ID: "lb-aff", VIP: vip, Backends: backends,
		Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: 80, NodePort: port}}}
	if err := m.Apply(spec); err != nil {
		t.Fatal(err)
	}
	if got := seen(); len(got) != 2 {
		t.Errorf("round-robin: backends answering %v, want both", got)
	}
	spec.ClientAffinity = true
	if err := m.Apply(spec); err != nil {
		t.Fatal(err)
	}
	if got := seen(); len(got) != 1 {
		t.Errorf("client affinity: backends answering %v, want one", got)
	}
}
