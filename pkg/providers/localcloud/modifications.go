package localcloud

import (
	"context"
	"fmt"
	"os"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// UserAgent is the User-Agent this provider's calls carry: localcloud
// records it as who last set a load balancer or created a route, and
// ListModifications reports it. The host and process make it name the
// controller manager that did it (in a Pod the host name is the Pod's).
func UserAgent() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return fmt.Sprintf("stratus-localcloud-provider (host %s, pid %d)", host, os.Getpid())
}

// ListModifications implements cloud.ModificationLister: a load balancer
// last changed when a caller last set its spec (updatedAt, updatedBy), a
// route when it was created (routes are never updated). Load balancers
// being deleted are left out: their last change is their deletion.
func (c *Cloud) ListModifications(ctx context.Context, clusterName string) (_ []cloud.Modification, err error) {
	defer markThrottled(&err)
	cluster := clusterOr(clusterName, c.clusterName)
	var out []cloud.Modification
	// Page by page: a listing of thousands of load balancers with
	// thousands of backends each need not sit in memory at once.
	err = c.client.EachLoadBalancer(ctx, lcclient.ListOptions{Cluster: cluster, MaxResults: listPageSize}, func(lb *api.LoadBalancer) error {
		if lb.Status != api.LBDeleting {
			out = append(out, cloud.Modification{Kind: cloud.KindLoadBalancer, Name: lb.Name, At: lb.UpdatedAt, By: lb.UpdatedBy})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("localcloud: list the load balancers of cluster %q: %w", cluster, err)
	}
	routes, err := c.client.ListRoutes(ctx, cluster)
	if err != nil {
		return nil, fmt.Errorf("localcloud: list the routes of cluster %q: %w", cluster, err)
	}
	for _, r := range routes {
		out = append(out, cloud.Modification{Kind: cloud.KindRoute, Name: r.Name, At: r.CreatedAt, By: r.CreatedBy})
	}
	return out, nil
}
