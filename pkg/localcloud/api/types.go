package api

import (
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"time"
)

// Version is the path prefix of every API call.
const Version = "/v1"

// InstanceState is the lifecycle state of an instance.
type InstanceState string

// Instance states. A terminated instance is kept for the record but no
// longer counts against quotas and no longer holds its addresses.
const (
	InstanceRunning    InstanceState = "running"
	InstanceStopped    InstanceState = "stopped"
	InstanceTerminated InstanceState = "terminated"
)

// Addresses are the network identities of an instance.
type Addresses struct {
	Internal string `json:"internal"`
	// Internal6 is a dual-stack instance's IPv6 address, beside Internal.
	Internal6 string `json:"internal6,omitempty"`
	External  string `json:"external,omitempty"`
	Hostname  string `json:"hostname"`
}

// Instance is one virtual machine.
type Instance struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Zone      string            `json:"zone"`
	Region    string            `json:"region"`
	Type      string            `json:"type"`
	State     InstanceState     `json:"state"`
	Addresses Addresses         `json:"addresses"`
	Tags      map[string]string `json:"tags,omitempty"`
	CreatedAt time.Time         `json:"createdAt"`
}

// CreateInstanceRequest is the body of POST /v1/instances.
type CreateInstanceRequest struct {
	Name   string            `json:"name"`
	Zone   string            `json:"zone"`
	Region string            `json:"region"`
	Type   string            `json:"type"`
	Tags   map[string]string `json:"tags,omitempty"`
	// External asks for an address from the external pool as well.
	External bool `json:"external,omitempty"`
	// InternalAddress, when set, is the instance's internal address
	// instead of one from the internal pool: a machine whose address its
	// network gives it (the sandbox's real nodes, each in a network
	// namespace of its own). No live instance may hold it.
	InternalAddress string `json:"internalAddress,omitempty"`
	// InternalAddress6, when set, is the instance's IPv6 address beside
	// its internal one (a dual-stack machine). No live instance may hold
	// it.
	InternalAddress6 string `json:"internalAddress6,omitempty"`
}

// BatchCreateInstancesRequest is the body of POST /v1/instances:batchCreate.
// The batch is all-or-nothing: one invalid item rejects the whole batch.
type BatchCreateInstancesRequest struct {
	Instances []CreateInstanceRequest `json:"instances"`
}

// InstanceList is one page of instances.
type InstanceList struct {
	Items         []Instance `json:"items"`
	NextPageToken string     `json:"nextPageToken,omitempty"`
}

// Protocol of a load balancer listener.
type Protocol string

// Supported listener protocols.
const (
	ProtocolTCP Protocol = "TCP"
	ProtocolUDP Protocol = "UDP"
)

// LBStatus is the lifecycle state of a load balancer.
type LBStatus string

// Load balancer states: provisioning until the configured provisioning
// time has passed, then active (the data plane forwards), deleting until
// the record is removed. A load balancer whose VIP:port cannot be bound is
// in error, with the reason in StatusMessage, until a retry binds it.
const (
	LBProvisioning LBStatus = "provisioning"
	LBActive       LBStatus = "active"
	LBError        LBStatus = "error"
	LBDeleting     LBStatus = "deleting"
)

// Conventional load balancer tag keys; the provider writes them so that a
// cluster can find the load balancers it owns.
const (
	TagServiceNamespace = "service-namespace"
	TagServiceName      = "service-name"
	TagServiceUID       = "service-uid"
	// TagCluster marks the instances that are a cluster's machines (the
	// sandbox registers a node for each running one).
	TagCluster = "cluster"
)

// Listener maps a VIP port to the node port every backend serves, or,
// on a load balancer whose targets are endpoints, to its endpoints.
type Listener struct {
	Protocol Protocol `json:"protocol"`
	Port     int      `json:"port"`
	// NodePort is what every backend serves the listener on; 0 on a load
	// balancer whose targets are endpoints, which has no use for it.
	NodePort int `json:"nodePort"`
	// Endpoints are the listener's targets on a load balancer whose
	// targets are endpoints (TargetsEndpoints): pod address:port pairs,
	// each with its conditions. The IPv4 VIP's connections go to the IPv4
	// ones, the IPv6 VIP's to the IPv6 ones.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
}

// Endpoint is one target of a listener of a load balancer whose targets
// are endpoints, with the conditions of its EndpointSlice entry.
type Endpoint struct {
	Address string `json:"address"`
	Port    int    `json:"port"`
	// New connections go to ready endpoints, and to serving ones (which
	// are terminating) only when none is ready; an endpoint neither ready
	// nor serving gets none.
	Ready       bool `json:"ready"`
	Serving     bool `json:"serving"`
	Terminating bool `json:"terminating,omitempty"`
}

// AddrPort is the endpoint's "address:port" ("[address]:port" for IPv6).
func (e Endpoint) AddrPort() string {
	return net.JoinHostPort(e.Address, strconv.Itoa(e.Port))
}

// Targets says what a load balancer sends its traffic to.
type Targets string

// The kinds of targets: instances (Backends, on each listener's node port),
// the default, or endpoints (each listener's Endpoints).
const (
	TargetsInstances Targets = "instances"
	TargetsEndpoints Targets = "endpoints"
)

// HealthCheck configures the active health check of the backends.
// Zero values mean the defaults documented in DefaultHealthCheck.
type HealthCheck struct {
	// Port is the node port probed; 0 probes the first TCP listener's
	// node port, and a load balancer without TCP listeners is not probed.
	Port int `json:"port,omitempty"`
	// Path, when set, makes the probe an HTTP GET of this path, healthy
	// only on 200: what kube-proxy answers on a Service's health check
	// node port (503 on a node without a local endpoint) and on :10256.
	// Empty, the probe is a TCP connect.
	Path               string `json:"path,omitempty"`
	IntervalMs         int    `json:"intervalMs,omitempty"`
	TimeoutMs          int    `json:"timeoutMs,omitempty"`
	HealthyThreshold   int    `json:"healthyThreshold,omitempty"`
	UnhealthyThreshold int    `json:"unhealthyThreshold,omitempty"`
}

// DefaultHealthCheck returns the values used for unset health check fields.
func DefaultHealthCheck() HealthCheck {
	return HealthCheck{IntervalMs: 5000, TimeoutMs: 2000, HealthyThreshold: 2, UnhealthyThreshold: 2}
}

// WithDefaults fills unset fields from DefaultHealthCheck.
func (h HealthCheck) WithDefaults() HealthCheck {
	d := DefaultHealthCheck()
	if h.IntervalMs == 0 {
		h.IntervalMs = d.IntervalMs
	}
	if h.TimeoutMs == 0 {
		h.TimeoutMs = d.TimeoutMs
	}
	if h.HealthyThreshold == 0 {
		h.HealthyThreshold = d.HealthyThreshold
	}
	if h.UnhealthyThreshold == 0 {
		h.UnhealthyThreshold = d.UnhealthyThreshold
	}
	return h
}

// LoadBalancerSpec is the part of a load balancer a caller sets; create
// takes it whole and update replaces it whole.
type LoadBalancerSpec struct {
	Listeners []Listener `json:"listeners"`
	// Targets is TargetsEndpoints for a load balancer whose targets are
	// its listeners' Endpoints; empty or TargetsInstances for one whose
	// targets are its Backends. An update may switch between them; the
	// VIPs stay.
	Targets     Targets     `json:"targets,omitempty"`
	Backends    []string    `json:"backends"`
	HealthCheck HealthCheck `json:"healthCheck"`
	// SourceRanges restricts clients; empty allows every source.
	SourceRanges []string `json:"sourceRanges,omitempty"`
	// UDPIdleTimeoutMs ends a UDP client flow after this much silence;
	// 0 means 30 seconds.
	UDPIdleTimeoutMs int `json:"udpIdleTimeoutMs,omitempty"`
	// SessionAffinity ClientIP sends every connection of one client
	// address to the same healthy backend for as long as the healthy set
	// stays the same; empty or None spreads connections round-robin.
	SessionAffinity SessionAffinity `json:"sessionAffinity,omitempty"`
	// ProxyProtocol v1 or v2 makes the load balancer a proxy that opens
	// each TCP connection to a target with a PROXY protocol header of that
	// version, carrying the client's address and the VIP; empty sends
	// none. UDP listeners are forwarded without one.
	ProxyProtocol ProxyProtocol `json:"proxyProtocol,omitempty"`
	// Proxy makes the load balancer a proxy whose connections to targets
	// come from its own address, where the cloud could otherwise pass
	// packets through (what ipMode Proxy reports); ProxyProtocol implies it.
	Proxy bool `json:"proxy,omitempty"`
	// IPFamilies are the families the load balancer has a VIP of, IPv4
	// and/or IPv6, in any order; empty means IPv4. An IPv6 VIP needs the
	// cloud's IPv6 VIP pool (`localcloud serve --vip6-pool`). A family
	// added by an update gets a VIP then; a family removed gives its VIP
	// back; the VIP of a family kept never changes.
	IPFamilies []IPFamily `json:"ipFamilies,omitempty"`
}

// EndpointTargets reports whether the spec's targets are endpoints.
func (s *LoadBalancerSpec) EndpointTargets() bool { return s.Targets == TargetsEndpoints }

// IPFamily is an IP family of a load balancer's VIPs.
type IPFamily string

// The IP families.
const (
	IPv4 IPFamily = "IPv4"
	IPv6 IPFamily = "IPv6"
)

// Families returns the spec's IP families, IPv4 when none is set.
func (s *LoadBalancerSpec) Families() []IPFamily {
	if len(s.IPFamilies) == 0 {
		return []IPFamily{IPv4}
	}
	return s.IPFamilies
}

// Has reports whether the spec asks for a VIP of family f.
func (s *LoadBalancerSpec) Has(f IPFamily) bool {
	for _, g := range s.Families() {
		if g == f {
			return true
		}
	}
	return false
}

// ProxyProtocol is the PROXY protocol version a load balancer speaks to
// its targets.
type ProxyProtocol string

// The PROXY protocol versions (haproxy's specification).
const (
	ProxyProtocolV1 ProxyProtocol = "v1"
	ProxyProtocolV2 ProxyProtocol = "v2"
)

// SessionAffinity is how a load balancer chooses a backend per client.
type SessionAffinity string

// The session affinities a load balancer supports.
const (
	SessionAffinityNone     SessionAffinity = "None"
	SessionAffinityClientIP SessionAffinity = "ClientIP"
)

// LoadBalancer is one L4 load balancer.
type LoadBalancer struct {
	ID      string            `json:"id"`
	Name    string            `json:"name"`
	Cluster string            `json:"cluster"`
	Tags    map[string]string `json:"tags,omitempty"`
	LoadBalancerSpec
	Status LBStatus `json:"status"`
	// StatusMessage says why a load balancer is in error.
	StatusMessage string `json:"statusMessage,omitempty"`
	// VIP is the IPv4 address, empty for a load balancer without IPv4;
	// VIP6 the IPv6 one, empty without IPv6.
	VIP  string `json:"vip"`
	VIP6 string `json:"vip6,omitempty"`
	// ReadyAt is when a provisioning load balancer becomes active, or
	// when a deleting one disappears.
	ReadyAt   time.Time `json:"readyAt,omitzero"`
	CreatedAt time.Time `json:"createdAt"`
	// UpdatedAt is when a caller last set the spec (its creation or an
	// update); the cloud's own status moves leave it alone, so that it
	// tells when something last managed the load balancer.
	UpdatedAt time.Time `json:"updatedAt"`
	// UpdatedBy is the User-Agent of the call that set UpdatedAt.
	UpdatedBy string `json:"updatedBy,omitempty"`
}

// CreateLoadBalancerRequest is the body of POST /v1/loadbalancers.
type CreateLoadBalancerRequest struct {
	Name    string            `json:"name"`
	Cluster string            `json:"cluster"`
	Tags    map[string]string `json:"tags,omitempty"`
	// VIP asks for this address of the VIP pool; empty lets the cloud
	// choose. VIP6 does the same for the IPv6 VIP (of the IPv6 pool). The
	// VIP of a load balancer never changes after creation.
	VIP  string `json:"vip,omitempty"`
	VIP6 string `json:"vip6,omitempty"`
	LoadBalancerSpec
}

// UpdateLoadBalancerRequest is the body of PUT /v1/loadbalancers/{id}.
type UpdateLoadBalancerRequest struct {
	LoadBalancerSpec
}

// LoadBalancerList is one page of load balancers.
type LoadBalancerList struct {
	Items         []LoadBalancer `json:"items"`
	NextPageToken string         `json:"nextPageToken,omitempty"`
}

// RouteState tells whether a route's target still exists.
type RouteState string

// Route states; a blackhole route points at a terminated instance.
const (
	RouteActive    RouteState = "active"
	RouteBlackhole RouteState = "blackhole"
)

// Route sends a destination CIDR to an instance, inside a cluster's table.
type Route struct {
	Name            string `json:"name"`
	Cluster         string `json:"cluster"`
	DestinationCIDR string `json:"destinationCIDR"`
	InstanceID      string `json:"instanceId"`
	// InstanceName is filled from the instance record on every read, so
	// that a caller maps a route to its node without another call.
	InstanceName string     `json:"instanceName,omitempty"`
	State        RouteState `json:"state"`
	// CreatedAt is also when the route last changed: a route is never
	// updated, only created and deleted.
	CreatedAt time.Time `json:"createdAt"`
	// CreatedBy is the User-Agent of the call that created it.
	CreatedBy string `json:"createdBy,omitempty"`
}

// CreateRouteRequest is the body of POST /v1/routetables/{cluster}/routes.
type CreateRouteRequest struct {
	Name            string `json:"name"`
	DestinationCIDR string `json:"destinationCIDR"`
	InstanceID      string `json:"instanceId"`
}

// InstanceWatch is the answer of GET /v1/admin/instances:watch: every
// instance with the tags asked for, terminated ones included, as of
// Generation.
type InstanceWatch struct {
	Generation uint64     `json:"generation"`
	Items      []Instance `json:"items"`
}

// RouteList is the content of a cluster's route table.
type RouteList struct {
	Items []Route `json:"items"`
}

// Duration is a time.Duration that travels as a Go duration string
// ("150ms") so that the admin API is readable by people.
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"150ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		// A type error lets the decoder name the field that held it.
		return &json.UnmarshalTypeError{Value: "string " + strconv.Quote(s), Type: reflect.TypeFor[Duration]()}
	}
	*d = Duration(v)
	return nil
}

// OperationStats counts the requests of one operation by HTTP status.
type OperationStats struct {
	Total  int64            `json:"total"`
	ByCode map[string]int64 `json:"byCode"`
}

// Stats is the body of GET /v1/admin/stats.
type Stats struct {
	Since      time.Time                 `json:"since"`
	Total      int64                     `json:"total"`
	Operations map[string]OperationStats `json:"operations"`
}

// Count returns the number of requests of op, all status codes together.
func (s Stats) Count(op string) int64 { return s.Operations[op].Total }
