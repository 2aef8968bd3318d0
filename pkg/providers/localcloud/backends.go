package localcloud

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// backends maps nodes to instance ids through their providerIDs. Nodes
// without one are not initialized yet and cannot carry traffic.
func backends(nodes []*corev1.Node) []string {
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if id, err := ParseProviderID(n.Spec.ProviderID); err == nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return slices.Compact(ids)
}

// backendRejected tells whether the cloud refused a load balancer write
// because one of its backends names an instance that no longer exists.
func backendRejected(err error) bool {
	var ae *lcclient.APIError
	return errors.As(err, &ae) && ae.Code == api.CodeInvalidArgument && strings.HasPrefix(ae.Field, "backends[")
}

// withLiveBackends runs a load balancer write and, when the cloud refuses
// it for a backend whose instance is gone (a Node not yet deleted after its
// instance was terminated), drops every such backend and writes once more,
// as real providers skip instances they cannot find. Healthy writes cost
// nothing extra; a refused one costs one instance list. The skipped Nodes
// are logged.
func (l *loadBalancers) withLiveBackends(ctx context.Context, spec *api.LoadBalancerSpec, nodes []*corev1.Node,
	write func(api.LoadBalancerSpec) (*api.LoadBalancer, error)) (*api.LoadBalancer, error) {
	lb, err := write(*spec)
	if !backendRejected(err) {
		return lb, err
	}
	exists, lerr := l.liveInstances(ctx)
	if lerr != nil {
		return nil, errors.Join(err, lerr)
	}
	var skipped []string
	for _, n := range nodes {
		if id, perr := ParseProviderID(n.Spec.ProviderID); perr == nil && !exists[id] {
			skipped = append(skipped, n.Name)
		}
	}
	spec.Backends = slices.DeleteFunc(spec.Backends, func(id string) bool { return !exists[id] })
	klog.FromContext(ctx).Info("Skipping load balancer backends whose instance no longer exists",
		"nodes", skipped, "backends", len(spec.Backends))
	return write(*spec)
}

// liveInstances returns which instance ids exist and are not terminated.
func (l *loadBalancers) liveInstances(ctx context.Context) (map[string]bool, error) {
	live, err := l.client.ListAllInstances(ctx, lcclient.ListOptions{MaxResults: listPageSize})
	if err != nil {
		return nil, fmt.Errorf("localcloud: list instances: %w", err)
	}
	exists := make(map[string]bool, len(live))
	for _, in := range live {
		exists[in.ID] = in.State != api.InstanceTerminated
	}
	return exists, nil
}
