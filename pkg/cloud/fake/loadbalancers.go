package fake

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// Balancer is a load balancer the double holds.
type Balancer struct {
	Cluster string
	// Name is the cloud's name: upstream's default name for the Service's
	// UID when the double made it (or PutBalancer was given none).
	Name    string
	Service types.NamespacedName
	UID     types.UID
	Ports   []corev1.ServicePort
	// Hosts are the names of the nodes last given, sorted: a load
	// balancer's targets are a set.
	Hosts []string
	// Backends are the providerIDs of the nodes last given, sorted (a node
	// without one carries no traffic); ListLoadBalancers reports them. Nil
	// means unknown, as from a provider that does not report backends.
	Backends []string
	Status   corev1.LoadBalancerStatus
	// Families are the Service's spec.ipFamilies as the last
	// EnsureLoadBalancer was handed them.
	Families []corev1.IPFamily
	// Endpoints are the "address:port" targets the last
	// EnsureLoadBalancerEndpoints was given, sorted; nil for a load
	// balancer that targets nodes.
	Endpoints []string
}

// GetLoadBalancerName is upstream's default name; it makes no call.
func (c *Cloud) GetLoadBalancerName(_ context.Context, _ string, svc *corev1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(svc)
}

func lbKey(cluster, name string) string { return cluster + "/" + name }

func serviceOf(svc *corev1.Service) string { return svc.Namespace + "/" + svc.Name }

// GetLoadBalancer returns the Service's load balancer's status.
func (c *Cloud) GetLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	if err := c.enter(ctx, Call{Op: "GetLoadBalancer", Object: serviceOf(svc)}); err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.balancers[lbKey(cluster, c.GetLoadBalancerName(ctx, cluster, svc))]
	if !ok {
		return nil, false, nil
	}
	st := *b.Status.DeepCopy()
	return &st, true, nil
}

// EnsureLoadBalancer creates or updates the Service's load balancer. A new
// one gets the next address of 192.0.2.0/24 (documentation range, never
// routed) with ipMode VIP, unless SetStatus gave the Service another.
func (c *Cloud) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	if err := c.enter(ctx, Call{Op: "EnsureLoadBalancer", Object: serviceOf(svc), Nodes: nodeNames(nodes, false)}); err != nil {
		return nil, err
	}
	if err := c.refusedPort(svc); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.balancerLocked(ctx, cluster, svc)
	b.Hosts, b.Backends, b.Endpoints = nodeNames(nodes, true), c.targets(nodes), nil
	st := *b.Status.DeepCopy()
	return &st, nil
}

// balancerLocked returns the Service's load balancer, made if it is new,
// with its addresses for the Service's families, any status SetStatus
// gave it, and the Service's name, UID and ports: what both ensures record.
func (c *Cloud) balancerLocked(ctx context.Context, cluster string, svc *corev1.Service) *Balancer {
	if c.balancers == nil {
		c.balancers = map[string]*Balancer{}
	}
	name := c.GetLoadBalancerName(ctx, cluster, svc)
	b, ok := c.balancers[lbKey(cluster, name)]
	if !ok {
		c.nextIP++
		b = &Balancer{Cluster: cluster, Name: name, Status: corev1.LoadBalancerStatus{Ingress: c.ingress(svc.Spec.IPFamilies, nil)}}
		c.balancers[lbKey(cluster, name)] = b
	} else if len(c.IPFamilies) > 0 && !slices.Equal(b.Families, svc.Spec.IPFamilies) {
		c.nextIP++
		b.Status.Ingress = c.ingress(svc.Spec.IPFamilies, b.Status.Ingress)
	}
	b.Families = slices.Clone(svc.Spec.IPFamilies)
	if st, ok := c.statuses[serviceOf(svc)]; ok {
		b.Status = *st.DeepCopy()
	}
	b.Service = types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	b.UID = svc.UID
	b.Ports = append([]corev1.ServicePort(nil), svc.Spec.Ports...)
	return b
}

// ingress is a load balancer's: one address of the documentation ranges
// (192.0.2.0/24, 2001:db8::/32; never routed) per family the Service asks
// for, in its order, when IPFamilies is set, keeping the address it had of
// a family (had); one IPv4 address otherwise, as an IPv4-only cloud that
// does not read the field answers.
func (c *Cloud) ingress(families []corev1.IPFamily, had []corev1.LoadBalancerIngress) []corev1.LoadBalancerIngress {
	v4 := corev1.LoadBalancerIngress{IP: fmt.Sprintf("192.0.2.%d", c.nextIP%254+1), IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}
	if len(c.IPFamilies) == 0 {
		return []corev1.LoadBalancerIngress{v4}
	}
	v6 := corev1.LoadBalancerIngress{IP: fmt.Sprintf("2001:db8::%x", c.nextIP%0xfffe+1), IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}
	for _, in := range had {
		if a, err := netip.ParseAddr(in.IP); err == nil && a.Is4() {
			v4 = in
		} else if err == nil {
			v6 = in
		}
	}
	var out []corev1.LoadBalancerIngress
	for _, f := range families {
		switch {
		case !slices.Contains(c.IPFamilies, f):
			// Not served: a provider that declares its families is never
			// handed another one by the controller; one that is anyway
			// leaves it out, which the controller notices.
		case f == corev1.IPv6Protocol:
			out = append(out, v6)
		default:
			out = append(out, v4)
		}
	}
	return out
}

// LoadBalancerIPFamilies implements cloud.IPFamilyLister: IPFamilies,
// none (not declared) when it is empty.
func (c *Cloud) LoadBalancerIPFamilies() []corev1.IPFamily { return slices.Clone(c.IPFamilies) }

// refusedPort names the Service's first port of a protocol outside
// Protocols, before anything changes.
func (c *Cloud) refusedPort(svc *corev1.Service) error {
	if len(c.Protocols) == 0 {
		return nil
	}
	for _, p := range svc.Spec.Ports {
		if !slices.Contains(c.Protocols, p.Protocol) {
			return fmt.Errorf("fake EnsureLoadBalancer %s: port %q (%d/%s): %w",
				serviceOf(svc), p.Name, p.Port, p.Protocol, cloud.ErrPortNotSupported)
		}
	}
	return nil
}

// UpdateLoadBalancer sets the load balancer's hosts; it fails when the
// load balancer does not exist, as a cloud's would.
func (c *Cloud) UpdateLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	if err := c.enter(ctx, Call{Op: "UpdateLoadBalancer", Object: serviceOf(svc), Nodes: nodeNames(nodes, false)}); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.balancers[lbKey(cluster, c.GetLoadBalancerName(ctx, cluster, svc))]
	if !ok {
		return fmt.Errorf("fake UpdateLoadBalancer: service %s/%s has no load balancer", svc.Namespace, svc.Name)
	}
	b.Hosts, b.Backends = nodeNames(nodes, true), c.targets(nodes)
	return nil
}

// EnsureLoadBalancerDeleted deletes the Service's load balancer, if any.
func (c *Cloud) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *corev1.Service) error {
	if err := c.enter(ctx, Call{Op: "EnsureLoadBalancerDeleted", Object: serviceOf(svc)}); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.balancers, lbKey(cluster, c.GetLoadBalancerName(ctx, cluster, svc)))
	return nil
}

// ListLoadBalancers lists the cluster's load balancers, sorted by name,
// with their backends.
func (c *Cloud) ListLoadBalancers(ctx context.Context, cluster string) ([]cloud.LoadBalancer, error) {
	if err := c.enter(ctx, Call{Op: "ListLoadBalancers"}); err != nil {
		return nil, err
	}
	var out []cloud.LoadBalancer
	for _, b := range c.Balancers() {
		if b.Cluster == cluster {
			out = append(out, cloud.LoadBalancer{Name: b.Name, ServiceNamespace: b.Service.Namespace,
				ServiceName: b.Service.Name, ServiceUID: b.UID, Backends: b.Backends, Endpoints: b.Endpoints})
		}
	}
	return out, nil
}

// SetStatus makes the load balancer of service ("namespace/name") report
// st from its next EnsureLoadBalancer on, as a cloud that gave it that
// address (or honoured spec.loadBalancerIP) does.
func (c *Cloud) SetStatus(service string, st corev1.LoadBalancerStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.statuses == nil {
		c.statuses = map[string]corev1.LoadBalancerStatus{}
	}
	c.statuses[service] = *st.DeepCopy()
}

// PutBalancer adds or replaces a load balancer as it is, without logging a
// call, as if another tool, an earlier run or a change in the cloud had
// made it. An empty Name is upstream's default name for b.UID, the name
// the double's own calls use for that Service.
func (c *Cloud) PutBalancer(b Balancer) {
	if b.Name == "" {
		b.Name = cloudprovider.DefaultLoadBalancerName(&corev1.Service{ObjectMeta: metav1.ObjectMeta{UID: b.UID}})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.balancers == nil {
		c.balancers = map[string]*Balancer{}
	}
	c.balancers[lbKey(b.Cluster, b.Name)] = &b
}

// DeleteBalancer removes a load balancer (by cluster and name) without
// logging a call, as one deleted in the cloud behind the controller's back.
func (c *Cloud) DeleteBalancer(cluster, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.balancers, lbKey(cluster, name))
}

// Balancer returns a copy of the cluster's load balancer of service
// ("namespace/name"), without logging a call.
func (c *Cloud) Balancer(cluster, service string) (Balancer, bool) {
	for _, b := range c.Balancers() {
		if b.Cluster == cluster && b.Service.String() == service {
			return b, true
		}
	}
	return Balancer{}, false
}

// Balancers returns copies of every load balancer held, sorted by cluster
// and name.
func (c *Cloud) Balancers() []Balancer {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := slices.Sorted(maps.Keys(c.balancers))
	out := make([]Balancer, 0, len(keys))
	for _, k := range keys {
		b := *c.balancers[k]
		b.Hosts = append([]string(nil), b.Hosts...)
		if b.Backends != nil {
			b.Backends = append([]string{}, b.Backends...)
		}
		b.Endpoints = slices.Clone(b.Endpoints)
		b.Status = *b.Status.DeepCopy()
		out = append(out, b)
	}
	return out
}

// nodeNames returns the nodes' names, in the order given or sorted.
func nodeNames(nodes []*corev1.Node, sorted bool) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	if sorted {
		sort.Strings(out)
	}
	return out
}

// targets are the providerIDs of the nodes a load balancer can reach,
// sorted.
func (c *Cloud) targets(nodes []*corev1.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if n.Spec.ProviderID != "" && !c.NoTarget[n.Spec.ProviderID] {
			out = append(out, n.Spec.ProviderID)
		}
	}
	sort.Strings(out)
	return out
}
