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

// CreateInstance creates one instance; the cloud allocates its addresses.
func (c *Client) CreateInstance(ctx context.Context, req api.CreateInstanceRequest) (*api.Instance, error) {
	var out api.Instance
	if err := c.do(ctx, http.MethodPost, "/instances", nil, req, &out); err != nil {
		return nil, fmt.Errorf("localcloud: create instance %q: %w", req.Name, err)
	}
	return &out, nil
}

// BatchCreateInstances creates up to api.MaxBatchCreate instances in one
// call, all or none.
func (c *Client) BatchCreateInstances(ctx context.Context, reqs []api.CreateInstanceRequest) ([]api.Instance, error) {
	var out api.InstanceList
	if err := c.do(ctx, http.MethodPost, "/instances:batchCreate", nil, api.BatchCreateInstancesRequest{Instances: reqs}, &out); err != nil {
		return nil, fmt.Errorf("localcloud: batch create %d instances: %w", len(reqs), err)
	}
	return out.Items, nil
}

// GetInstance returns an instance, terminated ones included.
func (c *Client) GetInstance(ctx context.Context, id string) (*api.Instance, error) {
	var out api.Instance
	if err := c.do(ctx, http.MethodGet, "/instances/"+pathEscape(id), nil, nil, &out); err != nil {
		return nil, fmt.Errorf("localcloud: get instance %s: %w", id, err)
	}
	return &out, nil
}

// ListInstances returns one page of instances.
func (c *Client) ListInstances(ctx context.Context, opts ListOptions) (*api.InstanceList, error) {
	var out api.InstanceList
	if err := c.do(ctx, http.MethodGet, "/instances", opts.values(), nil, &out); err != nil {
		return nil, fmt.Errorf("localcloud: list instances: %w", err)
	}
	return &out, nil
}

// ListAllInstances follows pages until the end; one call per page.
func (c *Client) ListAllInstances(ctx context.Context, opts ListOptions) ([]api.Instance, error) {
	var all []api.Instance
	for {
		page, err := c.ListInstances(ctx, opts)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		if page.NextPageToken == "" {
			return all, nil
		}
		opts.PageToken = page.NextPageToken
	}
}

func (c *Client) instanceAction(ctx context.Context, method, id, action string) (*api.Instance, error) {
	var out api.Instance
	path := "/instances/" + pathEscape(id)
	if action != "" {
		path += "/" + action
	}
	if err := c.do(ctx, method, path, nil, nil, &out); err != nil {
		if action == "" {
			action = "delete"
		}
		return nil, fmt.Errorf("localcloud: %s instance %s: %w", action, id, err)
	}
	return &out, nil
}

// StopInstance stops a running instance (a no-op when already stopped).
func (c *Client) StopInstance(ctx context.Context, id string) (*api.Instance, error) {
	return c.instanceAction(ctx, http.MethodPost, id, "stop")
}

// StartInstance starts a stopped instance.
func (c *Client) StartInstance(ctx context.Context, id string) (*api.Instance, error) {
	return c.instanceAction(ctx, http.MethodPost, id, "start")
}

// DeleteInstance terminates an instance.
func (c *Client) DeleteInstance(ctx context.Context, id string) (*api.Instance, error) {
	return c.instanceAction(ctx, http.MethodDelete, id, "")
}

// AttachExternalAddress allocates an external address from the cloud's
// pool to an instance and returns the instance with it. An instance that
// already has one fails with ErrConflict, a terminated one too.
func (c *Client) AttachExternalAddress(ctx context.Context, id string) (*api.Instance, error) {
	var out api.Instance
	if err := c.do(ctx, http.MethodPost, "/instances/"+pathEscape(id)+"/externalAddress", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("localcloud: attach external address to instance %s: %w", id, err)
	}
	return &out, nil
}

// DetachExternalAddress releases an instance's external address back to
// the pool and returns the instance without it. An instance without one
// fails with ErrNotFound.
func (c *Client) DetachExternalAddress(ctx context.Context, id string) (*api.Instance, error) {
	var out api.Instance
	if err := c.do(ctx, http.MethodDelete, "/instances/"+pathEscape(id)+"/externalAddress", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("localcloud: detach external address from instance %s: %w", id, err)
	}
	return &out, nil
}

// CreateLoadBalancer creates a load balancer; it starts provisioning. A
// duplicate name within the cluster fails with ErrConflict.
func (c *Client) CreateLoadBalancer(ctx context.Context, req api.CreateLoadBalancerRequest) (*api.LoadBalancer, error) {
	var out api.LoadBalancer
	if err := c.do(ctx, http.MethodPost, "/loadbalancers", nil, req, &out); err != nil {
		return nil, fmt.Errorf("localcloud: create load balancer %q: %w", req.Name, err)
	}
	return &out, nil
}

// GetLoadBalancer returns a load balancer by id.
func (c *Client) GetLoadBalancer(ctx context.Context, id string) (*api.LoadBalancer, error) {
	var out api.LoadBalancer
	if err := c.do(ctx, http.MethodGet, "/loadbalancers/"+pathEscape(id), nil, nil, &out); err != nil {
		return nil, fmt.Errorf("localcloud: get load balancer %s: %w", id, err)
	}
	return &out, nil
}

// ListLoadBalancers returns one page of load balancers.
func (c *Client) ListLoadBalancers(ctx context.Context, opts ListOptions) (*api.LoadBalancerList, error) {
	var out api.LoadBalancerList
	if err := c.do(ctx, http.MethodGet, "/loadbalancers", opts.values(), nil, &out); err != nil {
		return nil, fmt.Errorf("localcloud: list load balancers: %w", err)
	}
	return &out, nil
}

// ListAllLoadBalancers follows pages until the end; one call per page.
func (c *Client) ListAllLoadBalancers(ctx context.Context, opts ListOptions) ([]api.LoadBalancer, error) {
	var all []api.LoadBalancer
	for {
		page, err := c.ListLoadBalancers(ctx, opts)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		if page.NextPageToken == "" {
			return all, nil
		}
		opts.PageToken = page.NextPageToken
	}
}

// UpdateLoadBalancer replaces a load balancer's spec.
func (c *Client) UpdateLoadBalancer(ctx context.Context, id string, spec api.LoadBalancerSpec) (*api.LoadBalancer, error) {
	var out api.LoadBalancer
	if err := c.do(ctx, http.MethodPut, "/loadbalancers/"+pathEscape(id), nil, api.UpdateLoadBalancerRequest{LoadBalancerSpec: spec}, &out); err != nil {
		return nil, fmt.Errorf("localcloud: update load balancer %s: %w", id, err)
	}
	return &out, nil
}

// DeleteLoadBalancer starts deleting a load balancer.
func (c *Client) DeleteLoadBalancer(ctx context.Context, id string) (*api.LoadBalancer, error) {
	var out api.LoadBalancer
	if err := c.do(ctx, http.MethodDelete, "/loadbalancers/"+pathEscape(id), nil, nil, &out); err != nil {
		return nil, fmt.Errorf("localcloud: delete load balancer %s: %w", id, err)
	}
	return &out, nil
}

// ListRoutes returns a cluster's route table.
func (c *Client) ListRoutes(ctx context.Context, cluster string) ([]api.Route, error) {
	var out api.RouteList
	if err := c.do(ctx, http.MethodGet, "/routetables/"+pathEscape(cluster)+"/routes", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("localcloud: list routes of %s: %w", cluster, err)
	}
	return out.Items, nil
}

// CreateRoute adds a route to a cluster's table.
func (c *Client) CreateRoute(ctx context.Context, cluster string, req api.CreateRouteRequest) (*api.Route, error) {
	var out api.Route
	if err := c.do(ctx, http.MethodPost, "/routetables/"+pathEscape(cluster)+"/routes", nil, req, &out); err != nil {
		return nil, fmt.Errorf("localcloud: create route %q in %s: %w", req.Name, cluster, err)
	}
	return &out, nil
}

// DeleteRoute removes a route by name.
func (c *Client) DeleteRoute(ctx context.Context, cluster, name string) error {
	if err := c.do(ctx, http.MethodDelete, "/routetables/"+pathEscape(cluster)+"/routes/"+pathEscape(name), nil, nil, nil); err != nil {
		return fmt.Errorf("localcloud: delete route %q in %s: %w", name, cluster, err)
	}
	return nil
}

// Stats returns the request counters.
func (c *Client) Stats(ctx context.Context) (*api.Stats, error) {
	var out api.Stats
	if err := c.do(ctx, http.MethodGet, "/admin/stats", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("localcloud: get stats: %w", err)
	}
	return &out, nil
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
	var out api.Knobs
	if err := c.do(ctx, http.MethodGet, "/admin/config", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("localcloud: get config: %w", err)
	}
	return &out, nil
}

// UpdateConfig changes the knobs set in p and returns the result.
func (c *Client) UpdateConfig(ctx context.Context, p api.KnobsPatch) (*api.Knobs, error) {
	var out api.Knobs
	if err := c.do(ctx, http.MethodPut, "/admin/config", nil, p, &out); err != nil {
		return nil, fmt.Errorf("localcloud: update config: %w", err)
	}
	return &out, nil
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
	var out api.InstanceWatch
	if err := c.do(ctx, http.MethodGet, "/admin/instances:watch", q, nil, &out); err != nil {
		return nil, fmt.Errorf("localcloud: watch instances: %w", err)
	}
	return &out, nil
}
