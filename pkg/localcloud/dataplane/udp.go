package dataplane

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

const maxDatagram = 64 * 1024

type udpListener struct {
	lb       *loadBalancer
	pc       *net.UDPConn
	six      bool // the VIP is IPv6
	lf       listenerFamily
	nodePort atomic.Int64

	mu     sync.Mutex
	flows  map[netip.AddrPort]*udpFlow
	closed bool
	wg     sync.WaitGroup
}

// udpFlow is one client's session: an upstream socket to the backend chosen
// for its first datagram, so replies come back from the VIP and all of a
// client's datagrams reach the same backend.
type udpFlow struct {
	client   netip.AddrPort
	upstream *net.UDPConn
	lastSeen atomic.Int64
}

func (lb *loadBalancer) listenUDP(addr netip.AddrPort, nodePort int) (*udpListener, error) {
	pc, err := lb.sockets.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return nil, err
	}
	six := addr.Addr().Is6()
	l := &udpListener{lb: lb, pc: pc, six: six, lf: listenerFamily{api.ProtocolUDP, int(addr.Port()), six}, flows: map[netip.AddrPort]*udpFlow{}}
	l.nodePort.Store(int64(nodePort))
	l.wg.Add(1)
	go l.readLoop()
	return l, nil
}

func (l *udpListener) setNodePort(p int) { l.nodePort.Store(int64(p)) }

func (l *udpListener) readLoop() {
	defer l.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, src, err := l.pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if !l.lb.snap.Load().allowed(src.Addr()) {
			continue
		}
		f := l.flow(src)
		if f == nil {
			continue
		}
		f.lastSeen.Store(time.Now().UnixNano())
		_, _ = f.upstream.Write(buf[:n])
	}
}

// flow returns the client's flow, opening one to a healthy backend if needed.
func (l *udpListener) flow(src netip.AddrPort) *udpFlow {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.flows[src]; ok || l.closed {
		return f
	}
	t, ok := l.lb.pick(src.Addr(), 0, l.lf)
	if !ok {
		return nil
	}
	dst := netip.AddrPortFrom(t.dialAddr(l.six), uint16(t.portFor(int(l.nodePort.Load()))))
	up, err := l.lb.sockets.DialUDP("udp", nil, net.UDPAddrFromAddrPort(dst))
	if err != nil {
		l.lb.log.V(4).Info("UDP backend dial failed", "backend", t.id, "err", err)
		return nil
	}
	f := &udpFlow{client: src, upstream: up}
	f.lastSeen.Store(time.Now().UnixNano())
	l.flows[src] = f
	l.wg.Add(1)
	go l.replyLoop(f)
	return f
}

// replyLoop relays the backend's answers to the client until the flow has
// been idle for the load balancer's idle timeout.
func (l *udpListener) replyLoop(f *udpFlow) {
	defer l.wg.Done()
	defer func() {
		l.mu.Lock()
		if l.flows[f.client] == f {
			delete(l.flows, f.client)
		}
		l.mu.Unlock()
		_ = f.upstream.Close()
	}()
	buf := make([]byte, maxDatagram)
	for {
		idle := l.lb.snap.Load().udpIdle
		deadline := time.Unix(0, f.lastSeen.Load()).Add(idle)
		if !time.Now().Before(deadline) {
			return
		}
		_ = f.upstream.SetReadDeadline(deadline)
		n, err := f.upstream.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			// Closed, or the backend port refused (ICMP): the flow is over.
			return
		}
		f.lastSeen.Store(time.Now().UnixNano())
		_, _ = l.pc.WriteToUDPAddrPort(buf[:n], f.client)
	}
}

func (l *udpListener) close() {
	l.mu.Lock()
	l.closed = true
	_ = l.pc.Close()
	for _, f := range l.flows {
		_ = f.upstream.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}
