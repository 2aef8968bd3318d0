// Package fake is a provider test double for controllers' and providers'
// unit tests: upstream's cloudprovider.Interface and Stratus' extensions
// over canned answers (instances, load balancers, routes) held in memory,
// with a log of every call (what it was about, the nodes it was given),
// errors to return per operation, per object or for the next calls, and a
// gate to hold an operation's calls. It plays the part of upstream's
// k8s.io/cloud-provider/fake for the contract as Stratus extends it.
package fake

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// Cloud is the double. The zero value is ready: a provider called "fake"
// with InstancesV2, load balancers, routes and zones, no instances, and
// the InstanceLister and LoadBalancerLister extensions. Options are set
// before first use; canned answers and errors may change at any time.
type Cloud struct {
	// Name is what ProviderName returns; "fake" when empty.
	Name string
	// NoClusterID makes HasClusterID false.
	NoClusterID bool
	// Disable* leave out an interface, as a provider without it does.
	DisableInstancesV2  bool
	DisableLoadBalancer bool
	DisableRoutes       bool
	DisableZones        bool
	// EnableInstancesV1 adds upstream's legacy Instances.
	EnableInstancesV1 bool
	// RouteQuota, when positive, is how many routes a cluster may have:
	// CreateRoute beyond it fails with cloud.ErrQuotaExceeded, as a full
	// route table does.
	RouteQuota int
	// Protocols, when set, are the protocols its load balancers accept:
	// EnsureLoadBalancer refuses a Service with a port of another one
	// with an error wrapping cloud.ErrPortNotSupported, as a cloud
	// without SCTP does.
	Protocols []corev1.Protocol
	// IPFamilies, when set, are the IP families its load balancers serve
	// (cloud.IPFamilyLister): a new load balancer gets one ingress IP per
	// family of the Service it serves, and one whose Service's families
	// changed is made anew, with new addresses. Unset, it declares none
	// and answers one IPv4 address whatever the Service asks.
	IPFamilies []corev1.IPFamily
	// NilMetadata makes InstanceMetadata answer nil, nil for an instance
	// it holds, as a buggy provider does: callers must not take a nil
	// error to mean metadata they can read.
	NilMetadata bool
	// NoTarget holds providerIDs a load balancer cannot target: they are
	// left out of its backends, as a cloud leaves out a node whose
	// instance it cannot find or whose providerID it cannot parse.
	NoTarget map[string]bool
	// RefuseEndpointTargets, when set, is why its load balancers cannot
	// target endpoints (cloud.EndpointTargeter's EndpointTargets says no).
	RefuseEndpointTargets string

	mu        sync.Mutex
	instances map[string]cloud.Instance // by ProviderID
	balancers map[string]*Balancer      // by cluster + "/" + name
	routes    map[string]*cloudprovider.Route
	errs      map[string]error
	errsFor   map[string]error   // by op + " " + object
	queued    map[string][]error // by op: the next calls' answers
	statuses  map[string]corev1.LoadBalancerStatus
	hidden    map[string]bool // providerIDs ListInstances leaves out
	gates     map[string]chan struct{}
	calls     []Call
	nextIP    int
	inFlight  map[string]int
	maxFlight map[string]int
}

// Call is one call the double served, as its log keeps it.
type Call struct {
	// Op is the method's name, e.g. "EnsureLoadBalancer".
	Op string
	// Object is what the call was about: a Service's "namespace/name", a
	// Node's providerID (its name when it has none), a route's destination
	// CIDR; empty for a list.
	Object string
	// Nodes are the names of the nodes an EnsureLoadBalancer or
	// UpdateLoadBalancer was given, in the order given.
	Nodes []string
	// Endpoints are the "address:port" targets an
	// EnsureLoadBalancerEndpoints was given, sorted.
	Endpoints []string
}

// String is "Op Object", or Op alone for a call about no one object.
func (c Call) String() string {
	if c.Object == "" {
		return c.Op
	}
	return c.Op + " " + c.Object
}

var (
	_ cloudprovider.Interface    = (*Cloud)(nil)
	_ cloudprovider.InstancesV2  = (*Cloud)(nil)
	_ cloudprovider.Instances    = (*Cloud)(nil)
	_ cloudprovider.LoadBalancer = (*Cloud)(nil)
	_ cloudprovider.Routes       = (*Cloud)(nil)
	_ cloudprovider.Zones        = (*Cloud)(nil)
	_ cloud.InstanceLister       = (*Cloud)(nil)
	_ cloud.LoadBalancerLister   = (*Cloud)(nil)
)

// New returns a double holding insts.
func New(insts ...cloud.Instance) *Cloud {
	c := &Cloud{}
	for _, in := range insts {
		c.PutInstance(in)
	}
	return c
}

// PutInstance adds or replaces an instance (by ProviderID).
func (c *Cloud) PutInstance(in cloud.Instance) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(in)
}

// put is PutInstance with the lock held.
func (c *Cloud) put(in cloud.Instance) {
	if c.instances == nil {
		c.instances = map[string]cloud.Instance{}
	}
	if in.Metadata.ProviderID == "" {
		in.Metadata.ProviderID = in.ProviderID
	}
	c.instances[in.ProviderID] = in
}

// EditInstance changes in place the instance the per-node calls find for
// a Node called name without a providerID, without logging a call, as a
// change in the cloud behind the caller's back. change gets a copy (its
// addresses too) and what it leaves replaces the instance as PutInstance
// would put it, under its ProviderID, changed or not; change must not
// call c. EditInstance reports whether it found such an instance, so
// that a test cannot pass on an edit that changed nothing.
func (c *Cloud) EditInstance(name string, change func(*cloud.Instance)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.find("", name)
	if !ok {
		return false
	}
	delete(c.instances, in.ProviderID)
	in.Metadata.NodeAddresses = slices.Clone(in.Metadata.NodeAddresses)
	change(&in)
	c.put(in)
	return true
}

// DeleteInstance removes the instance with providerID.
func (c *Cloud) DeleteInstance(providerID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.instances, providerID)
}

// SetError makes every call of op (a method name, e.g. "ListInstances")
// return err; op "" means every operation. A nil err clears it.
func (c *Cloud) SetError(op string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.errs == nil {
		c.errs = map[string]error{}
	}
	if err == nil {
		delete(c.errs, op)
		return
	}
	c.errs[op] = err
}

// SetErrorFor makes the calls of op about one object return err: the
// object is a route's destination CIDR, a Service's "namespace/name", or a
// Node's providerID (its name when it has none); op "" means every
// operation about the object. A nil err clears it.
func (c *Cloud) SetErrorFor(op, object string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.errsFor == nil {
		c.errsFor = map[string]error{}
	}
	if err == nil {
		delete(c.errsFor, op+" "+object)
		return
	}
	c.errsFor[op+" "+object] = err
}

// FailNext makes the next len(errs) calls of op return errs, in order,
// before any error SetError or SetErrorFor set: a cloud's answers to
// successive attempts. They are returned as given, unwrapped, so a test
// controls the exact text a provider would answer.
func (c *Cloud) FailNext(op string, errs ...error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queued == nil {
		c.queued = map[string][]error{}
	}
	c.queued[op] = append(c.queued[op], errs...)
}

// Throttled is the error a rate-limited cloud answers (HTTP 429 with
// Retry-After: after): it wraps cloud.ErrThrottled and a RetryError, as
// the provider contract asks.
func Throttled(after time.Duration) error {
	return fmt.Errorf("%w: %w", cloud.ErrThrottled, cloudproviderapi.NewRetryError("429 Too Many Requests", after))
}

// MaxConcurrent is the most calls of op that were in flight (waiting at
// its gate included) at once.
func (c *Cloud) MaxConcurrent(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxFlight[op]
}

// Gate holds every call of op until the returned release is called (or
// the call's context ends).
func (c *Cloud) Gate(op string) (release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gates == nil {
		c.gates = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	c.gates[op] = ch
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			delete(c.gates, op)
			c.mu.Unlock()
			close(ch)
		})
	}
}

// Calls returns the operations called so far, in order.
func (c *Cloud) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.calls))
	for _, call := range c.calls {
		out = append(out, call.Op)
	}
	return out
}

// CallLog returns the calls served so far, in order, with what each was
// about.
func (c *Cloud) CallLog() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Call, 0, len(c.calls))
	for _, call := range c.calls {
		call.Nodes = append([]string(nil), call.Nodes...)
		out = append(out, call)
	}
	return out
}

// CallCount is how many times op was called.
func (c *Cloud) CallCount(op string) int {
	n := 0
	for _, got := range c.Calls() {
		if got == op {
			n++
		}
	}
	return n
}

// ResetCalls clears the call log.
func (c *Cloud) ResetCalls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = nil
}

// enter logs call, waits at its operation's gate, and returns the error
// queued or set for it. The lock is not held on return.
func (c *Cloud) enter(ctx context.Context, call Call) error {
	op := call.Op
	c.mu.Lock()
	c.calls = append(c.calls, call)
	gate := c.gates[op]
	if c.inFlight == nil {
		c.inFlight, c.maxFlight = map[string]int{}, map[string]int{}
	}
	c.inFlight[op]++
	c.maxFlight[op] = max(c.maxFlight[op], c.inFlight[op])
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inFlight[op]--
		c.mu.Unlock()
	}()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if q := c.queued[op]; len(q) > 0 {
		c.queued[op] = q[1:]
		return q[0]
	}
	if call.Object != "" {
		for _, key := range []string{op + " " + call.Object, " " + call.Object} {
			if err := c.errsFor[key]; err != nil {
				return fmt.Errorf("fake %s %s: %w", op, call.Object, err)
			}
		}
	}
	if err := c.errs[op]; err != nil {
		return fmt.Errorf("fake %s: %w", op, err)
	}
	if err := c.errs[""]; err != nil {
		return fmt.Errorf("fake %s: %w", op, err)
	}
	return nil
}

// Initialize does nothing.
func (c *Cloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

// ProviderName returns Name, or "fake".
func (c *Cloud) ProviderName() string {
	if c.Name == "" {
		return "fake"
	}
	return c.Name
}

// HasClusterID is !NoClusterID.
func (c *Cloud) HasClusterID() bool { return !c.NoClusterID }

// Clusters is not offered.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// InstancesV2 is c unless DisableInstancesV2.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) {
	if c.DisableInstancesV2 {
		return nil, false
	}
	return c, true
}

// Instances is c when EnableInstancesV1.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) {
	if !c.EnableInstancesV1 {
		return nil, false
	}
	return c, true
}

// LoadBalancer is c unless DisableLoadBalancer.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	if c.DisableLoadBalancer {
		return nil, false
	}
	return c, true
}

// Routes is c unless DisableRoutes.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) {
	if c.DisableRoutes {
		return nil, false
	}
	return c, true
}

// Zones is c unless DisableZones.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) {
	if c.DisableZones {
		return nil, false
	}
	return c, true
}

// find matches a Node as a provider's per-node calls do: by providerID
// when it has one, else by name. Called with the lock held.
func (c *Cloud) find(providerID, name string) (cloud.Instance, bool) {
	if providerID != "" {
		in, ok := c.instances[providerID]
		return in, ok
	}
	ids := make([]string, 0, len(c.instances))
	for id := range c.instances {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if c.instances[id].Name == name {
			return c.instances[id], true
		}
	}
	return cloud.Instance{}, false
}

func (c *Cloud) lookup(ctx context.Context, op, providerID, name string) (cloud.Instance, bool, error) {
	object := providerID
	if object == "" {
		object = name
	}
	if err := c.enter(ctx, Call{Op: op, Object: object}); err != nil {
		return cloud.Instance{}, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.find(providerID, name)
	return in, ok, nil
}

// HideFromList makes ListInstances leave the instance out although it
// exists, as a list cut short or an eventually consistent cloud does; the
// per-node calls still find it.
func (c *Cloud) HideFromList(providerID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hidden == nil {
		c.hidden = map[string]bool{}
	}
	c.hidden[providerID] = true
}

// Held returns the instances held, sorted by ProviderID, without logging
// a call: for a test to inspect or edit its canned answers.
func (c *Cloud) Held() []cloud.Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]cloud.Instance, 0, len(c.instances))
	for _, in := range c.instances {
		out = append(out, in)
	}
	sortInstances(out)
	return out
}
