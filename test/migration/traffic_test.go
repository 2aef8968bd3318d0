package migration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// responder stands in for kube-proxy and the pods: on every node address
// it answers at the node ports of the Services it is given, TCP with one
// reply line per request line (so a held connection can carry many
// requests), UDP as an echo; health-check node ports answer /healthz
// with 200, as kube-proxy does where the Service has local endpoints (the
// load balancer's probe for externalTrafficPolicy Local is an HTTP GET).
type responder struct {
	t    *testing.T
	mu   sync.Mutex
	open map[string]bool
}

func newResponder(t *testing.T) *responder { return &responder{t: t, open: map[string]bool{}} }

func (r *responder) serve(nodes map[string]string, svc *corev1.Service) {
	r.t.Helper()
	for _, ip := range nodes {
		for _, p := range svc.Spec.Ports {
			r.listen(string(p.Protocol), ip, p.NodePort)
		}
		if svc.Spec.HealthCheckNodePort != 0 {
			r.listen("HTTP", ip, svc.Spec.HealthCheckNodePort)
		}
	}
}

func (r *responder) listen(proto, ip string, port int32) {
	r.t.Helper()
	addr := net.JoinHostPort(ip, strconv.Itoa(int(port)))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open[proto+addr] {
		return
	}
	r.open[proto+addr] = true
	switch proto {
	case "HTTP":
		l, err := net.Listen("tcp", addr)
		if err != nil {
			r.t.Fatalf("responder: %v", err)
		}
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprint(w, `{"localEndpoints": 1}`)
		})}
		r.t.Cleanup(func() { _ = srv.Close() })
		go func() { _ = srv.Serve(l) }()
	case "TCP":
		l, err := net.Listen("tcp", addr)
		if err != nil {
			r.t.Fatalf("responder: %v", err)
		}
		r.t.Cleanup(func() { _ = l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer func() { _ = c.Close() }()
					sc := bufio.NewScanner(c)
					for sc.Scan() {
						if _, err := fmt.Fprintf(c, "%s %s\n", addr, sc.Text()); err != nil {
							return
						}
					}
				}()
			}
		}()
	case "UDP":
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			r.t.Fatalf("responder: %v", err)
		}
		r.t.Cleanup(func() { _ = pc.Close() })
		go func() {
			buf := make([]byte, 2048)
			for {
				n, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				_, _ = pc.WriteTo(buf[:n], from)
			}
		}()
	}
}

// probe sends one request to a VIP on a fresh connection.
func probe(ctx context.Context, proto, vip string) error {
	addr := net.JoinHostPort(vip, "80")
	c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, map[string]string{"TCP": "tcp", "UDP": "udp"}[proto], addr)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("probe\n")); err != nil {
		return err
	}
	buf := make([]byte, 256)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s %s: empty answer", proto, addr)
	}
	return nil
}

// traffic keeps one TCP connection through a VIP and sends a request
// through it every interval, and probes every VIP on fresh connections,
// counting what fails.
type traffic struct {
	held, fresh, heldFail, freshFail atomic.Int64
	firstErr                         atomic.Value
	stop                             context.CancelFunc
	done                             sync.WaitGroup
}

func (tr *traffic) fail(err error) { tr.firstErr.CompareAndSwap(nil, err.Error()) }

func startTraffic(ctx context.Context, t *testing.T, heldVIP string, vips map[string]string, protos map[string]string) *traffic {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	tr := &traffic{stop: cancel}
	conn, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", net.JoinHostPort(heldVIP, "80"))
	if err != nil {
		t.Fatalf("held connection to %s: %v", heldVIP, err)
	}
	tr.done.Add(2)
	go func() {
		defer tr.done.Done()
		defer func() { _ = conn.Close() }()
		rd := bufio.NewReader(conn)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			tr.held.Add(1)
			_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := fmt.Fprintf(conn, "req-%d\n", i); err != nil {
				tr.heldFail.Add(1)
				tr.fail(fmt.Errorf("held connection write: %w", err))
				continue
			}
			if _, err := rd.ReadString('\n'); err != nil {
				tr.heldFail.Add(1)
				tr.fail(fmt.Errorf("held connection read: %w", err))
			}
		}
	}()
	go func() {
		defer tr.done.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for name, vip := range vips {
				err := probe(ctx, protos[name], vip)
				if ctx.Err() != nil {
					return // stopped mid-probe: not a failure of the VIP
				}
				tr.fresh.Add(1)
				if err != nil {
					tr.freshFail.Add(1)
					tr.fail(fmt.Errorf("probe %s %s: %w", name, vip, err))
				}
			}
		}
	}()
	return tr
}

func (tr *traffic) end() {
	tr.stop()
	tr.done.Wait()
}

func (tr *traffic) String() string {
	return fmt.Sprintf("held connection: %d requests, %d failed; fresh probes: %d, %d failed",
		tr.held.Load(), tr.heldFail.Load(), tr.fresh.Load(), tr.freshFail.Load())
}
