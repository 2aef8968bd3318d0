package dataplane

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/netns"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// DefaultUDPIdleTimeout ends a UDP flow that has carried nothing for this long.
const DefaultUDPIdleTimeout = 30 * time.Second

// Backend is one target of a load balancer.
type Backend struct {
	ID string
	// Address is the instance's internal address; Address6 its IPv6 one,
	// if it has one: the IPv6 VIP's connections go there (a single-stack
	// IPv6 Service's node port is served on the node's IPv6 address only).
	Address  netip.Addr
	Address6 netip.Addr
	// Up is false for a stopped instance: never probed, never used.
	Up bool
}

// Spec is everything the data plane needs to run one load balancer.
type Spec struct {
	ID string
	// VIP is the IPv4 address; VIP6 the IPv6 one. Either may be unset (a
	// single-stack load balancer of the other family).
	VIP            netip.Addr
	VIP6           netip.Addr
	Listeners      []api.Listener
	Backends       []Backend
	HealthCheck    api.HealthCheck
	SourceRanges   []netip.Prefix
	UDPIdleTimeout time.Duration
	// ClientAffinity sends a client address's connections to one backend
	// (chosen by a hash of the address among the healthy ones); otherwise
	// connections go round-robin.
	ClientAffinity bool
	// ProxyProtocol, when set, makes the load balancer a proxy (even where
	// it could pass packets through) that starts each TCP connection to a
	// target with a PROXY protocol header of that version.
	ProxyProtocol api.ProxyProtocol
	// Proxy keeps the load balancer a proxy where it could pass through.
	Proxy bool
	// EndpointTargets: the targets are each listener's Endpoints (pod
	// address:port pairs), not Backends on the listeners' node ports.
	EndpointTargets bool
}

// Manager runs the load balancers of one localcloud.
type Manager struct {
	ctx    context.Context
	cancel context.CancelFunc
	opts   Options
	nft    *nft // nil unless passing through

	mu  sync.Mutex
	lbs map[string]*loadBalancer
}

// NewManager returns a Manager of proxies on the machine's own addresses,
// whose goroutines stop when ctx ends or Close is called.
func NewManager(ctx context.Context) *Manager {
	m, _ := NewManagerIn(ctx, Options{}) // cannot fail without a namespace
	return m
}

// Apply starts a load balancer or brings a running one to spec. Listeners
// that fail to bind are reported in the error; the others keep running.
func (m *Manager) Apply(spec Spec) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx.Err() != nil {
		return fmt.Errorf("dataplane: apply %s: manager closed", spec.ID)
	}
	lb, ok := m.lbs[spec.ID]
	if !ok {
		lb = newLoadBalancer(m.ctx, spec.ID, m.opts, m.nft)
		m.lbs[spec.ID] = lb
	}
	return lb.apply(spec)
}

// Remove stops a load balancer: its listeners and connections are closed.
func (m *Manager) Remove(id string) {
	m.mu.Lock()
	lb, ok := m.lbs[id]
	delete(m.lbs, id)
	m.mu.Unlock()
	if ok {
		lb.close()
	}
}

// Close stops every load balancer and waits for their goroutines.
func (m *Manager) Close() {
	m.cancel()
	m.mu.Lock()
	lbs := m.lbs
	m.lbs = map[string]*loadBalancer{}
	m.mu.Unlock()
	for _, lb := range lbs {
		lb.close()
	}
}

// Health reports the health of each backend of a load balancer, for
// inspection and tests.
func (m *Manager) Health(id string) map[string]bool {
	m.mu.Lock()
	lb, ok := m.lbs[id]
	m.mu.Unlock()
	if !ok {
		return nil
	}
	return lb.health()
}

// target is a backend a new connection may be sent to: an instance, on
// the listener's node port, or an endpoint, on its own port.
type target struct {
	id    string
	addr  netip.Addr
	addr6 netip.Addr
	// port is an endpoint's; 0 for an instance.
	port int
}

// dialAddr is the address a listener of the VIP family six dials: the
// target's IPv6 address for the IPv6 VIP when it has one.
func (t target) dialAddr(six bool) netip.Addr {
	if six && t.addr6.IsValid() {
		return t.addr6
	}
	return t.addr
}

// familyAddr is the target's address of the IPv6 family (six) or the
// IPv4 one, invalid when it has none: an endpoint has one address only.
func (t target) familyAddr(six bool) netip.Addr {
	if t.port != 0 {
		if t.addr.Is6() == six {
			return t.addr
		}
		return netip.Addr{}
	}
	if six {
		return t.addr6
	}
	return t.addr
}

// portFor is the port a connection to the target goes to: the endpoint's,
// else the listener's node port.
func (t target) portFor(nodePort int) int {
	if t.port != 0 {
		return t.port
	}
	return nodePort
}

// snapshot is the immutable routing state new connections read.
type snapshot struct {
	// healthy are the instances new connections go to; with endpoint
	// targets, byListener holds each listener's targets per family instead.
	healthy    []target
	endpoints  bool
	byListener map[listenerFamily][]target
	// serving are the healthy endpoints that are ready or serving, each
	// once: those whose flows are kept (all).
	serving        []target
	sourceRanges   []netip.Prefix
	udpIdle        time.Duration
	clientAffinity bool
	proxyProtocol  api.ProxyProtocol
}

func (s *snapshot) allowed(src netip.Addr) bool {
	if len(s.sourceRanges) == 0 {
		return true
	}
	src = src.Unmap()
	for _, p := range s.sourceRanges {
		if p.Contains(src) {
			return true
		}
	}
	return false
}

type listenerKey struct {
	vip   netip.Addr
	proto api.Protocol
	port  int
}

// listener is a bound VIP:port of either protocol.
type listener interface {
	setNodePort(int)
	close()
}

type loadBalancer struct {
	ctx context.Context
	id  string
	log klog.Logger
	// sockets opens the proxy's listeners and dials targets and health
	// checks, in the data plane's namespace.
	sockets netns.Sockets
	opts    Options
	nft     *nft
	// passing: the load balancer is an nftables table, not listeners.
	passing bool
	// programmed: the healthy targets the table was last built with.
	programmed []target
	// fams: the families of VIPs the table forwards.
	fams []family

	snap atomic.Pointer[snapshot]
	rr   atomic.Uint64

	mu        sync.Mutex
	spec      Spec
	listeners map[listenerKey]listener
	hstate    map[string]*healthState
	stopCheck context.CancelFunc
	checkDone chan struct{}
}

func newLoadBalancer(ctx context.Context, id string, opts Options, n *nft) *loadBalancer {
	lb := &loadBalancer{
		ctx: ctx, id: id, log: klog.FromContext(ctx).WithValues("loadBalancer", id),
		sockets: netns.Sockets{Path: opts.Netns}, opts: opts, nft: n,
		listeners: map[listenerKey]listener{}, hstate: map[string]*healthState{},
	}
	lb.snap.Store(&snapshot{})
	return lb
}

func (lb *loadBalancer) apply(spec Spec) error {
	lb.stopChecker()
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if spec.UDPIdleTimeout <= 0 {
		spec.UDPIdleTimeout = DefaultUDPIdleTimeout
	}
	spec.HealthCheck = spec.HealthCheck.WithDefaults()
	lb.spec = spec
	lb.syncHealthStateLocked()
	// Each VIP passes packets through where it can (passFamilies), and is
	// proxied otherwise.
	fams := lb.passFamilies(spec)
	var proxied []netip.Addr
	for _, vip := range []netip.Addr{spec.VIP, spec.VIP6} {
		if vip.IsValid() && !passes(fams, vip) {
			proxied = append(proxied, vip)
		}
	}
	want := map[listenerKey]api.Listener{}
	for _, vip := range proxied {
		for _, l := range spec.Listeners {
			want[listenerKey{vip, l.Protocol, l.Port}] = l
		}
	}
	// Listeners go first: a proxy listener and the table cannot both
	// serve the IPv4 VIP.
	for k, l := range lb.listeners {
		if _, keep := want[k]; !keep {
			l.close()
			delete(lb.listeners, k)
		}
	}
	var errs []error
	if len(fams) > 0 {
		errs = append(errs, lb.applyPassThroughLocked(fams))
	} else {
		if lb.passing {
			lb.stopPassThroughLocked()
		}
		lb.publishLocked()
	}
	for k, l := range want {
		if cur, ok := lb.listeners[k]; ok {
			cur.setNodePort(l.NodePort)
			continue
		}
		nl, err := lb.listen(k.vip, l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		lb.listeners[k] = nl
	}
	lb.startCheckerLocked()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dataplane: load balancer %s: %w", lb.id, err)
	}
	return nil
}

func (lb *loadBalancer) listen(vip netip.Addr, l api.Listener) (listener, error) {
	addr := netip.AddrPortFrom(vip, uint16(l.Port))
	if l.Protocol == api.ProtocolUDP {
		return lb.listenUDP(addr, l.NodePort)
	}
	return lb.listenTCP(addr, l.NodePort)
}

// publishLocked recomputes the snapshot new connections read.
func (lb *loadBalancer) publishLocked() {
	s := &snapshot{sourceRanges: lb.spec.SourceRanges, udpIdle: lb.spec.UDPIdleTimeout, clientAffinity: lb.spec.ClientAffinity,
		proxyProtocol: lb.spec.ProxyProtocol}
	if lb.spec.EndpointTargets {
		lb.endpointTargetsLocked(s)
	}
	for _, b := range lb.spec.Backends {
		if h := lb.hstate[b.ID]; b.Up && h != nil && h.healthy {
			s.healthy = append(s.healthy, target{id: b.ID, addr: b.Address, addr6: b.Address6})
		}
	}
	lb.snap.Store(s)
	if lb.passing {
		if err := lb.programLocked(s); err != nil {
			lb.log.Error(err, "Programming the pass-through load balancer")
		}
	}
}

// pick chooses a healthy backend for a connection from client: by a hash
// of its address with client affinity, else round-robin; ok is false when
// none is healthy. A retry after a failed dial passes attempt > 0, which
// moves an affine client on to the next backend. lf is the listener and
// VIP family asking, whose targets they are with endpoint targets.
func (lb *loadBalancer) pick(client netip.Addr, attempt int, lf listenerFamily) (target, bool) {
	s := lb.snap.Load()
	healthy := s.targets(lf)
	if len(healthy) == 0 {
		return target{}, false
	}
	if s.clientAffinity {
		h := fnv.New64a()
		_, _ = h.Write(client.Unmap().AsSlice())
		return healthy[int((h.Sum64()+uint64(attempt))%uint64(len(healthy)))], true
	}
	n := lb.rr.Add(1)
	return healthy[int(n%uint64(len(healthy)))], true
}

func (lb *loadBalancer) close() {
	lb.stopChecker()
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if lb.passing {
		lb.stopPassThroughLocked()
	}
	for k, l := range lb.listeners {
		l.close()
		delete(lb.listeners, k)
	}
}

func (lb *loadBalancer) health() map[string]bool {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	out := map[string]bool{}
	if lb.spec.EndpointTargets {
		lb.endpointHealthLocked(out)
		return out
	}
	for _, b := range lb.spec.Backends {
		h := lb.hstate[b.ID]
		out[b.ID] = b.Up && h != nil && h.healthy
	}
	return out
}
