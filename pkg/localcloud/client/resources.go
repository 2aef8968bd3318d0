package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// ListOptions select and page list answers. Zero fields are not sent.
type ListOptions struct {
	// Name filters by exact name.
	Name string
	// Tags filter by tag values (all must match).
	Tags map[string]string
	// State filters instances; empty lists every non-terminated instance.
	State api.InstanceState
	// Cluster filters load balancers.
	Cluster    string
	PageToken  string
	MaxResults int
}

func (o ListOptions) values() url.Values {
	q := url.Values{}
	if o.Name != "" {
		q.Set("name", o.Name)
	}
	for k, v := range o.Tags {
		q.Add("tag", k+"="+v)
	}
	if o.State != "" {
		q.Set("state", string(o.State))
	}
	if o.Cluster != "" {
		q.Set("cluster", o.Cluster)
	}
	if o.PageToken != "" {
		q.Set("pageToken", o.PageToken)
	}
	if o.MaxResults > 0 {
		q.Set("maxResults", strconv.Itoa(o.MaxResults))
	}
	return q
}

func pathEscape(s string) string { return url.PathEscape(s) }

// call makes one API call and decodes its answer into a new T; what names
// the call in the error ("localcloud: <what>: <cause>"), so that every
// resource's calls read as their path and their name.
func call[T any](ctx context.Context, c *Client, method, path string, query url.Values, in any, what string) (*T, error) {
	var out T
	if err := c.do(ctx, method, path, query, in, &out); err != nil {
		return nil, fmt.Errorf("localcloud: %s: %w", what, err)
	}
	return &out, nil
}

// page is one page of any list answer (api.InstanceList,
// api.LoadBalancerList), for following pages whatever the kind.
type page[T any] struct {
	Items         []T    `json:"items"`
	NextPageToken string `json:"nextPageToken,omitempty"`
}

// listAll follows pages until the end; one call per page.
func listAll[T any](ctx context.Context, c *Client, path string, opts ListOptions, what string) ([]T, error) {
	var all []T
	for {
		p, err := call[page[T]](ctx, c, http.MethodGet, path, opts.values(), nil, what)
		if err != nil {
			return nil, err
		}
		all = append(all, p.Items...)
		if p.NextPageToken == "" {
			return all, nil
		}
		opts.PageToken = p.NextPageToken
	}
}

// CreateInstance creates one instance; the cloud allocates its addresses.
func (c *Client) CreateInstance(ctx context.Context, req api.CreateInstanceRequest) (*api.Instance, error) {
	return call[api.Instance](ctx, c, http.MethodPost, "/instances", nil, req, fmt.Sprintf("create instance %q", req.Name))
}

// BatchCreateInstances creates up to api.MaxBatchCreate instances in one
// call, all or none.
func (c *Client) BatchCreateInstances(ctx context.Context, reqs []api.CreateInstanceRequest) ([]api.Instance, error) {
	out, err := call[api.InstanceList](ctx, c, http.MethodPost, "/instances:batchCreate", nil,
		api.BatchCreateInstancesRequest{Instances: reqs}, fmt.Sprintf("batch create %d instances", len(reqs)))
	if err != nil {
		return nil, err
	}
	return out.Items, nil
}

// GetInstance returns an instance, terminated ones included.
func (c *Client) GetInstance(ctx context.Context, id string) (*api.Instance, error) {
	return call[api.Instance](ctx, c, http.MethodGet, "/instances/"+pathEscape(id), nil, nil, "get instance "+id)
}

// ListInstances returns one page of instances.
func (c *Client) ListInstances(ctx context.Context, opts ListOptions) (*api.InstanceList, error) {
	return call[api.InstanceList](ctx, c, http.MethodGet, "/instances", opts.values(), nil, "list instances")
}

// ListAllInstances follows pages until the end; one call per page.
func (c *Client) ListAllInstances(ctx context.Context, opts ListOptions) ([]api.Instance, error) {
	return listAll[api.Instance](ctx, c, "/instances", opts, "list instances")
}

// instanceCall is a call on one instance: its path below the instance's
// (none for the instance itself) and what it is named in errors.
func (c *Client) instanceCall(ctx context.Context, method, id, sub, what string) (*api.Instance, error) {
	path := "/instances/" + pathEscape(id)
	if sub != "" {
		path += "/" + sub
	}
	return call[api.Instance](ctx, c, method, path, nil, nil, what)
}

// StopInstance stops a running instance (a no-op when already stopped).
func (c *Client) StopInstance(ctx context.Context, id string) (*api.Instance, error) {
	return c.instanceCall(ctx, http.MethodPost, id, "stop", "stop instance "+id)
}

// StartInstance starts a stopped instance.
func (c *Client) StartInstance(ctx context.Context, id string) (*api.Instance, error) {
	return c.instanceCall(ctx, http.MethodPost, id, "start", "start instance "+id)
}

// DeleteInstance terminates an instance.
func (c *Client) DeleteInstance(ctx context.Context, id string) (*api.Instance, error) {
	return c.instanceCall(ctx, http.MethodDelete, id, "", "delete instance "+id)
}

// AttachExternalAddress allocates an external address from the cloud's
// pool to an instance and returns the instance with it. An instance that
// already has one fails with ErrConflict, a terminated one too.
func (c *Client) AttachExternalAddress(ctx context.Context, id string) (*api.Instance, error) {
	return c.instanceCall(ctx, http.MethodPost, id, "externalAddress", "attach external address to instance "+id)
}

// DetachExternalAddress releases an instance's external address back to
// the pool and returns the instance without it. An instance without one
// fails with ErrNotFound.
func (c *Client) DetachExternalAddress(ctx context.Context, id string) (*api.Instance, error) {
	return c.instanceCall(ctx, http.MethodDelete, id, "externalAddress", "detach external address from instance "+id)
}

// CreateLoadBalancer creates a load balancer; it starts provisioning. A
// duplicate name within the cluster fails with ErrConflict.
func (c *Client) CreateLoadBalancer(ctx context.Context, req api.CreateLoadBalancerRequest) (*api.LoadBalancer, error) {
	return call[api.LoadBalancer](ctx, c, http.MethodPost, "/loadbalancers", nil, req, fmt.Sprintf("create load balancer %q", req.Name))
}

// GetLoadBalancer returns a load balancer by id.
func (c *Client) GetLoadBalancer(ctx context.Context, id string) (*api.LoadBalancer, error) {
	return call[api.LoadBalancer](ctx, c, http.MethodGet, "/loadbalancers/"+pathEscape(id), nil, nil, "get load balancer "+id)
}

// ListLoadBalancers returns one page of load balancers.
func (c *Client) ListLoadBalancers(ctx context.Context, opts ListOptions) (*api.LoadBalancerList, error) {
	return call[api.LoadBalancerList](ctx, c, http.MethodGet, "/loadbalancers", opts.values(), nil, "list load balancers")
}

// ListAllLoadBalancers follows pages until the end; one call per page.
func (c *Client) ListAllLoadBalancers(ctx context.Context, opts ListOptions) ([]api.LoadBalancer, error) {
	return listAll[api.LoadBalancer](ctx, c, "/loadbalancers", opts, "list load balancers")
}

// UpdateLoadBalancer replaces a load balancer's spec.
func (c *Client) UpdateLoadBalancer(ctx context.Context, id string, spec api.LoadBalancerSpec) (*api.LoadBalancer, error) {
	return call[api.LoadBalancer](ctx, c, http.MethodPut, "/loadbalancers/"+pathEscape(id), nil,
		api.UpdateLoadBalancerRequest{LoadBalancerSpec: spec}, "update load balancer "+id)
}

// DeleteLoadBalancer starts deleting a load balancer.
func (c *Client) DeleteLoadBalancer(ctx context.Context, id string) (*api.LoadBalancer, error) {
	return call[api.LoadBalancer](ctx, c, http.MethodDelete, "/loadbalancers/"+pathEscape(id), nil, nil, "delete load balancer "+id)
}

func routesPath(cluster string) string { return "/routetables/" + pathEscape(cluster) + "/routes" }

// ListRoutes returns a cluster's route table.
func (c *Client) ListRoutes(ctx context.Context, cluster string) ([]api.Route, error) {
	out, err := call[api.RouteList](ctx, c, http.MethodGet, routesPath(cluster), nil, nil, "list routes of "+cluster)
	if err != nil {
		return nil, err
	}
	return out.Items, nil
}

// CreateRoute adds a route to a cluster's table.
func (c *Client) CreateRoute(ctx context.Context, cluster string, req api.CreateRouteRequest) (*api.Route, error) {
	return call[api.Route](ctx, c, http.MethodPost, routesPath(cluster), nil, req, fmt.Sprintf("create route %q in %s", req.Name, cluster))
}

// DeleteRoute removes a route by name.
func (c *Client) DeleteRoute(ctx context.Context, cluster, name string) error {
	if err := c.do(ctx, http.MethodDelete, routesPath(cluster)+"/"+pathEscape(name), nil, nil, nil); err != nil {
		return fmt.Errorf("localcloud: delete route %q in %s: %w", name, cluster, err)
	}
	return nil
}

// Stats returns the request counters.
func (c *Client) Stats(ctx context.Context) (*api.Stats, error) {
	return call[api.Stats](ctx, c, http.MethodGet, "/admin/stats", nil, nil, "get stats")
}

// ResetStats zeroes the request counters.
func (c *Client) ResetStats(ctx context.Context) error {
	if err := c.do(ctx, http.MethodDelete, "/admin/stats", nil, nil, nil); err != nil {
		return fmt.Errorf("localcloud: reset stats: %w", err)
	}
	return nil
}

// Config returns the realism knobs.
func (c *Client) Config(ctx context.Context) (*api.Knobs, error) {
	return call[api.Knobs](ctx, c, http.MethodGet, "/admin/config", nil, nil, "get config")
}

// UpdateConfig changes the knobs set in p and returns the result.
func (c *Client) UpdateConfig(ctx context.Context, p api.KnobsPatch) (*api.Knobs, error) {
	return call[api.Knobs](ctx, c, http.MethodPut, "/admin/config", nil, p, "update config")
}

// WatchInstances waits until the instances changed after generation after
// (0: answer at once) or the server's wait ends, and returns every instance
// with the tags, terminated ones included. An admin call: not counted, not
// throttled.
func (c *Client) WatchInstances(ctx context.Context, after uint64, tags map[string]string) (*api.InstanceWatch, error) {
	q := url.Values{"after": {strconv.FormatUint(after, 10)}}
	for k, v := range tags {
		q.Add("tag", k+"="+v)
	}
	return call[api.InstanceWatch](ctx, c, http.MethodGet, "/admin/instances:watch", q, nil, "watch instances")
}
