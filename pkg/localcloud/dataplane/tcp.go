package dataplane

import (
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// dialTimeout bounds the connect to a backend; a backend that does not
// answer in time is skipped for the next healthy one.
const dialTimeout = 3 * time.Second

type tcpListener struct {
	lb       *loadBalancer
	ln       net.Listener
	six      bool // the VIP is IPv6
	lf       listenerFamily
	nodePort atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func (lb *loadBalancer) listenTCP(addr netip.AddrPort, nodePort int) (*tcpListener, error) {
	ln, err := lb.sockets.Listen(lb.ctx, "tcp", addr.String())
	if err != nil {
		return nil, err
	}
	six := addr.Addr().Is6()
	l := &tcpListener{lb: lb, ln: ln, six: six, lf: listenerFamily{api.ProtocolTCP, int(addr.Port()), six}, conns: map[net.Conn]struct{}{}}
	l.nodePort.Store(int64(nodePort))
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

func (l *tcpListener) setNodePort(p int) { l.nodePort.Store(int64(p)) }

func (l *tcpListener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		if !l.track(c) {
			_ = c.Close()
			return
		}
		l.wg.Add(1)
		go l.serve(c)
	}
}

func (l *tcpListener) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

func (l *tcpListener) untrack(c net.Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	_ = c.Close()
}

func (l *tcpListener) serve(client net.Conn) {
	defer l.wg.Done()
	defer l.untrack(client)
	src := client.RemoteAddr().(*net.TCPAddr).AddrPort().Addr()
	if !l.lb.snap.Load().allowed(src) {
		l.lb.log.V(4).Info("Dropped connection outside source ranges", "source", src)
		return
	}
	backend := l.dialBackend(src)
	if backend == nil {
		return
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = backend.Close()
		return
	}
	l.conns[backend] = struct{}{}
	l.mu.Unlock()
	defer l.untrack(backend)
	if v := l.lb.snap.Load().proxyProtocol; v != "" {
		if err := writeProxyHeader(backend, v, client); err != nil {
			l.lb.log.V(4).Info("Writing the PROXY protocol header failed", "err", err)
			return
		}
	}
	pipe(client, backend)
}

// writeProxyHeader tells the target who the client is: the client's
// address as the source and the VIP:port it connected to as the
// destination, in PROXY protocol version v.
func writeProxyHeader(backend net.Conn, v api.ProxyProtocol, client net.Conn) error {
	version := byte(1)
	if v == api.ProxyProtocolV2 {
		version = 2
	}
	_ = backend.SetWriteDeadline(time.Now().Add(dialTimeout))
	_, err := proxyproto.HeaderProxyFromAddrs(version, client.RemoteAddr(), client.LocalAddr()).WriteTo(backend)
	_ = backend.SetWriteDeadline(time.Time{})
	return err
}

// dialBackend tries healthy backends round-robin, at most a few, so that a
// backend that died between health checks costs one failed dial, not the
// client's connection.
func (l *tcpListener) dialBackend(client netip.Addr) net.Conn {
	nodePort := int(l.nodePort.Load())
	for attempt := range 3 {
		t, ok := l.lb.pick(client, attempt, l.lf)
		if !ok {
			return nil
		}
		port := strconv.Itoa(t.portFor(nodePort))
		// The data plane's context: a closing manager abandons the dial.
		c, err := l.lb.sockets.DialContext(l.lb.ctx, &net.Dialer{Timeout: dialTimeout}, "tcp", net.JoinHostPort(t.dialAddr(l.six).String(), port))
		if err == nil {
			return c
		}
		l.lb.log.V(4).Info("Backend dial failed", "backend", t.id, "err", err)
	}
	return nil
}

// pipe copies both ways and half-closes, so protocols that signal the end
// of a request with a FIN keep working.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}

func (l *tcpListener) close() {
	l.mu.Lock()
	l.closed = true
	_ = l.ln.Close()
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}
