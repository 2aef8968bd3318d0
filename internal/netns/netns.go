// Package netns makes sockets inside a named network namespace from a
// process that stays in its own: a socket belongs to the namespace of the
// thread that created it and keeps it, so listeners and connections made
// here work from any goroutine afterwards. The real nodes' relays and
// localcloud's load balancers on real nodes use it.
package netns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Path is where `ip netns add name` mounts a namespace.
func Path(name string) string { return filepath.Join("/run/netns", name) }

// Do runs fn on a thread inside the network namespace at nsPath. The
// thread goes back to its namespace afterwards; if it cannot, it stays
// locked and dies with its goroutine rather than serve others.
func Do(nsPath string, fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer func() { _ = orig.Close() }()
		target, err := os.Open(nsPath)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("netns: %w", err)
			return
		}
		defer func() { _ = target.Close() }()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("netns: setns %s: %w", nsPath, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		}
		ch <- ferr
	}()
	return <-ch
}

// Sockets opens sockets in one namespace; the zero value (no path) opens
// them in the process' own.
type Sockets struct {
	// Path of the namespace, as Path gives; empty for the process' own.
	Path string
}

func (s Sockets) do(fn func() error) error {
	if s.Path == "" {
		return fn()
	}
	return Do(s.Path, fn)
}

// Listen is net.Listen in the namespace (an IPv6 address bound as
// listenConfig says); ctx bounds the listen, not the listener.
func (s Sockets) Listen(ctx context.Context, network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := s.do(func() error {
		var err error
		ln, err = listenConfig().Listen(ctx, network, addr)
		return err
	})
	return ln, err
}

// ListenUDP is net.ListenUDP in the namespace (an IPv6 address bound as
// listenConfig says).
func (s Sockets) ListenUDP(network string, addr *net.UDPAddr) (*net.UDPConn, error) {
	var pc *net.UDPConn
	err := s.do(func() error {
		c, err := listenConfig().ListenPacket(context.Background(), network, addr.String())
		if err != nil {
			return err
		}
		pc = c.(*net.UDPConn)
		return nil
	})
	return pc, err
}

// listenConfig binds an IPv6 address with IP_FREEBIND (freeBindIPv6). A range made local
// by a `local` route (a load balancer's VIP range) accepts IPv4 binds to
// any of its addresses, but IPv6 refuses a bind to an address no interface
// holds unless the socket is free-bound; the route still delivers the
// range's packets to it. IPv4 binds are left strict, so that a VIP that is
// not local fails to bind rather than listening in vain.
func listenConfig() *net.ListenConfig { return &net.ListenConfig{Control: freeBindIPv6} }

func freeBindIPv6(_, address string, c syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !ap.Addr().Is6() || ap.Addr().Is4In6() {
		return nil
	}
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_FREEBIND, 1)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("set IP_FREEBIND on %s: %w", address, serr)
	}
	return nil
}

// DialUDP is net.DialUDP in the namespace.
func (s Sockets) DialUDP(network string, laddr, raddr *net.UDPAddr) (*net.UDPConn, error) {
	var c *net.UDPConn
	err := s.do(func() error {
		var err error
		c, err = net.DialUDP(network, laddr, raddr)
		return err
	})
	return c, err
}

// DialContext is d.DialContext in the namespace. The connect itself runs
// on the namespace's thread too: the socket is created there.
func (s Sockets) DialContext(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := s.do(func() error {
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}
