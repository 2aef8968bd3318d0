package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// defects a memCloud can have, each breaking one part of the contract.
type defects struct {
	existsFalse        bool   // InstanceExists is false for a running machine
	unwrappedNotFound  bool   // InstanceNotFound is stringified, not wrapped
	unstableAddresses  bool   // addresses come back in a different order each call
	listerMissing      bool   // ListInstances omits a machine
	nameFromVersion    bool   // the load balancer name depends on resourceVersion
	deleteMissingErrs  bool   // deleting a missing load balancer fails
	leakOnRetry        bool   // an ensure retried after a lost answer creates a second load balancer
	plainThrottle      bool   // throttling is a plain error
	routeCreateErrs    bool   // creating an existing route fails
	routeDeleteKept    bool   // a deleted route stays listed
	ingressIP          string // the ingress IP answered instead of 192.0.2.10 ("<nil>" is a nil net.IP's, as upstream's fake answers without ExternalIP)
	panicDeleteMissing bool   // deleting a missing load balancer panics
	ignoresCluster     bool   // load balancers are found by Service UID whatever the cluster
	rewritesEndpoints  bool   // an ensure of the same endpoints writes the load balancer again
	endpointsUnlisted  bool   // ListLoadBalancers reports no endpoints
	// The double declares and serves both IP families unless told
	// otherwise.
	families   []corev1.IPFamily // what LoadBalancerIPFamilies lists instead of both
	ipv4Only   bool              // it answers an IPv4 address whatever the Service's families
	wrongOrder bool              // it answers the other family's address too
}

// memCloud is an in-memory provider: correct unless a defect is set. It
// implements InstancesV2, LoadBalancer, Routes and both listers.
type memCloud struct {
	d defects

	mu        sync.Mutex
	machines  map[string]string // node name → instance ID
	lbs       map[string]memLB  // by cloud ID
	nextID    int
	routes    map[string]cloudprovider.Route // by CIDR
	calls     int
	failAfter int // -1: disarmed
	throttled bool
	flips     map[string]bool // per machine: the next answer's address order, with unstableAddresses
	lost      bool            // the last ensure's answer was lost
}

type memLB struct {
	cluster string
	name    string
	svc     types.UID
	ns      string
	svcN    string
	// at is when it was last written; endpoints are its targets'
	// "address:port", nil for one of node targets.
	at        time.Time
	endpoints []string
}

func newMemCloud(d defects) *memCloud {
	return &memCloud{d: d, machines: map[string]string{"m-1": "i-1", "m-2": "i-2"}, lbs: map[string]memLB{},
		routes: map[string]cloudprovider.Route{}, failAfter: -1}
}

var (
	_ cloudprovider.Interface    = (*memCloud)(nil)
	_ cloudprovider.InstancesV2  = (*memCloud)(nil)
	_ cloudprovider.LoadBalancer = (*memCloud)(nil)
	_ cloudprovider.Routes       = (*memCloud)(nil)
	_ cloud.InstanceLister       = (*memCloud)(nil)
	_ cloud.LoadBalancerLister   = (*memCloud)(nil)
)

var errLost = errors.New("answer lost (injected)")

// call counts one API call; it fails when throttled, and reports whether
// the answer of a call that did its work is to be lost.
func (c *memCloud) call() (lose bool, err error) {
	c.calls++
	if c.throttled {
		if c.d.plainThrottle {
			return false, errors.New("429 too many requests")
		}
		return false, cloudproviderapi.NewRetryError("throttled", time.Millisecond)
	}
	if c.failAfter < 0 {
		return false, nil
	}
	if c.failAfter == 0 {
		return true, nil
	}
	c.failAfter--
	return false, nil
}

func (c *memCloud) FailAfter(n int) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failAfter = n
	return func() { c.mu.Lock(); c.failAfter = -1; c.mu.Unlock() }
}

func (c *memCloud) Throttle() func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.throttled = true
	return func() { c.mu.Lock(); c.throttled = false; c.mu.Unlock() }
}

func (c *memCloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}
func (c *memCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool)                  { return c, true }
func (c *memCloud) Instances() (cloudprovider.Instances, bool)                        { return nil, false }
func (c *memCloud) InstancesV2() (cloudprovider.InstancesV2, bool)                    { return c, true }
func (c *memCloud) Zones() (cloudprovider.Zones, bool)                                { return nil, false }
func (c *memCloud) Clusters() (cloudprovider.Clusters, bool)                          { return nil, false }
func (c *memCloud) Routes() (cloudprovider.Routes, bool)                              { return c, true }
func (c *memCloud) ProviderName() string                                              { return "mem" }
func (c *memCloud) HasClusterID() bool                                                { return true }

// find looks a Node's machine up by providerID or name.
func (c *memCloud) find(n *corev1.Node) (string, bool) {
	for name, id := range c.machines {
		if n.Spec.ProviderID == "mem://"+id || (n.Spec.ProviderID == "" && n.Name == name) {
			return name, true
		}
	}
	return "", false
}

func (c *memCloud) notFound(n *corev1.Node) error {
	if c.d.unwrappedNotFound {
		// The defect under test: the sentinel is flattened to text.
		return fmt.Errorf("machine of %s: %s", n.Name, cloudprovider.InstanceNotFound.Error())
	}
	return fmt.Errorf("machine of %s: %w", n.Name, cloudprovider.InstanceNotFound)
}

func (c *memCloud) InstanceExists(_ context.Context, n *corev1.Node) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.call(); err != nil {
		return false, err
	}
	_, ok := c.find(n)
	return ok && !c.d.existsFalse, nil
}

func (c *memCloud) InstanceShutdown(_ context.Context, n *corev1.Node) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.call(); err != nil {
		return false, err
	}
	if _, ok := c.find(n); !ok {
		return false, c.notFound(n)
	}
	return false, nil
}

func (c *memCloud) metadata(name string) cloudprovider.InstanceMetadata {
	addrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0." + name[2:]}, {Type: corev1.NodeHostName, Address: name}}
	if c.d.unstableAddresses {
		if c.flips == nil {
			c.flips = map[string]bool{}
		}
		c.flips[name] = !c.flips[name]
		if c.flips[name] {
			addrs[0], addrs[1] = addrs[1], addrs[0]
		}
	}
	return cloudprovider.InstanceMetadata{ProviderID: "mem://" + c.machines[name], InstanceType: "t", NodeAddresses: addrs, Zone: "z", Region: "r"}
}

func (c *memCloud) InstanceMetadata(_ context.Context, n *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.call(); err != nil {
		return nil, err
	}
	name, ok := c.find(n)
	if !ok {
		return nil, c.notFound(n)
	}
	md := c.metadata(name)
	return &md, nil
}

func (c *memCloud) ListInstances(context.Context) ([]cloud.Instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.call(); err != nil {
		return nil, err
	}
	var out []cloud.Instance
	// Sorted, so that the answers' order (and with unstableAddresses, which
	// answer flips) does not depend on map iteration.
	for _, name := range slices.Sorted(maps.Keys(c.machines)) {
		id := c.machines[name]
		if c.d.listerMissing && name == "m-2" {
			continue
		}
		out = append(out, cloud.Instance{ProviderID: "mem://" + id, Name: name, Metadata: c.metadata(name)})
	}
	return out, nil
}

func (c *memCloud) GetLoadBalancerName(_ context.Context, _ string, svc *corev1.Service) string {
	if c.d.nameFromVersion {
		return "lb-" + string(svc.UID) + svc.ResourceVersion
	}
	return "lb-" + string(svc.UID)
}

func (c *memCloud) lookup(cluster string, svc *corev1.Service) (string, bool) {
	for id, lb := range c.lbs {
		if lb.svc == svc.UID && (lb.cluster == cluster || c.d.ignoresCluster) {
			return id, true
		}
	}
	return "", false
}

func (c *memCloud) GetLoadBalancer(_ context.Context, cluster string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.call(); err != nil {
		return nil, false, err
	}
	if _, ok := c.lookup(cluster, svc); !ok {
		return nil, false, nil
	}
	return c.ingress(svc), true, nil
}

// ingress answers one address per family the Service asks for (the
// ingressIP defect's, or 192.0.2.10, without any).
func (c *memCloud) ingress(svc *corev1.Service) *corev1.LoadBalancerStatus {
	ip := "192.0.2.10"
	if c.d.ingressIP != "" {
		ip = c.d.ingressIP
	}
	fams := svc.Spec.IPFamilies
	if len(fams) == 0 || c.d.ipv4Only {
		return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: ip}}}
	}
	if c.d.wrongOrder && len(fams) == 1 {
		fams = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	}
	st := &corev1.LoadBalancerStatus{}
	for _, f := range fams {
		a := "192.0.2.10"
		if f == corev1.IPv6Protocol {
			a = "2001:db8::10"
		}
		st.Ingress = append(st.Ingress, corev1.LoadBalancerIngress{IP: a})
	}
	return st
}

// LoadBalancerIPFamilies implements cloud.IPFamilyLister.
func (c *memCloud) LoadBalancerIPFamilies() []corev1.IPFamily {
	if c.d.families != nil {
		return c.d.families
	}
	return []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
}

func (c *memCloud) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, _ []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lose, err := c.call()
	if err != nil {
		return nil, err
	}
	// The leaky variant forgets, after a lost answer, that it created
	// the load balancer, and creates another on the retry.
	if _, ok := c.lookup(cluster, svc); !ok || c.d.leakOnRetry && c.lost {
		c.nextID++
		c.lbs[fmt.Sprint("id-", c.nextID)] = memLB{cluster: cluster, name: c.GetLoadBalancerName(ctx, cluster, svc), svc: svc.UID, ns: svc.Namespace, svcN: svc.Name, at: time.Now()}
	}
	c.lost = lose
	if lose {
		return nil, errLost
	}
	return c.ingress(svc), nil
}

func (c *memCloud) UpdateLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	_, err := c.EnsureLoadBalancer(ctx, cluster, svc, nodes)
	return err
}

func (c *memCloud) EnsureLoadBalancerDeleted(_ context.Context, cluster string, svc *corev1.Service) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.call(); err != nil {
		return err
	}
	id, ok := c.lookup(cluster, svc)
	if !ok {
		if c.d.panicDeleteMissing {
			panic("nil map lookup of " + svc.Name)
		}
		if c.d.deleteMissingErrs {
			return fmt.Errorf("load balancer of %s not found", svc.Name)
		}
		return nil
	}
	for ok {
		delete(c.lbs, id)
		id, ok = c.lookup(cluster, svc)
	}
	return nil
}

func (c *memCloud) ListLoadBalancers(_ context.Context, cluster string) ([]cloud.LoadBalancer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.call(); err != nil {
		return nil, err
	}
	var out []cloud.LoadBalancer
	for _, lb := range c.lbs {
		if lb.cluster != cluster && !c.d.ignoresCluster {
			continue
		}
		l := cloud.LoadBalancer{Name: lb.name, ServiceNamespace: lb.ns, ServiceName: lb.svcN, ServiceUID: lb.svc}
		if !c.d.endpointsUnlisted {
			l.Endpoints = lb.endpoints
		}
		out = append(out, l)
	}
	return out, nil
}

func (c *memCloud) ListRoutes(context.Context, string) ([]*cloudprovider.Route, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.call(); err != nil {
		return nil, err
	}
	var out []*cloudprovider.Route
	for _, r := range c.routes {
		out = append(out, &r)
	}
	return out, nil
}

func (c *memCloud) CreateRoute(_ context.Context, _, _ string, r *cloudprovider.Route) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.call(); err != nil {
		return err
	}
	if _, ok := c.routes[r.DestinationCIDR]; ok && c.d.routeCreateErrs {
		return fmt.Errorf("route %s already exists", r.DestinationCIDR)
	}
	c.routes[r.DestinationCIDR] = *r
	return nil
}

func (c *memCloud) DeleteRoute(_ context.Context, _ string, r *cloudprovider.Route) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.call(); err != nil {
		return err
	}
	if !c.d.routeDeleteKept {
		delete(c.routes, r.DestinationCIDR)
	}
	return nil
}
