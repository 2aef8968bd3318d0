package conformance_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

var _ cloud.EndpointTargeter = (*memCloud)(nil)

// EndpointTargets implements cloud.EndpointTargeter: the double targets
// any Service's endpoints.
func (c *memCloud) EndpointTargets(*corev1.Service) (bool, string) { return true, "" }

// EnsureLoadBalancerEndpoints keeps the endpoints of every port, written
// (a new modification time) only when they change, unless the
// rewritesEndpoints defect writes every time.
func (c *memCloud) EnsureLoadBalancerEndpoints(ctx context.Context, cluster string, svc *corev1.Service, set cloud.EndpointSet) (*corev1.LoadBalancerStatus, error) {
	st, err := c.EnsureLoadBalancer(ctx, cluster, svc, nil)
	if err != nil {
		return nil, err
	}
	eps := []string{}
	for _, list := range set {
		for _, e := range list {
			eps = append(eps, net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port))))
		}
	}
	slices.Sort(eps)
	eps = slices.Compact(eps)
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.lookup(cluster, svc)
	if !ok {
		return nil, fmt.Errorf("load balancer of %s vanished", svc.Name)
	}
	lb := c.lbs[id]
	if c.d.rewritesEndpoints || !slices.Equal(lb.endpoints, eps) {
		lb.endpoints, lb.at = eps, time.Now().Add(time.Nanosecond)
		c.lbs[id] = lb
	}
	return st, nil
}
