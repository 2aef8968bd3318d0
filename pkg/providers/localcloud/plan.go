package localcloud

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

var _ cloud.LoadBalancerPlanner = (*loadBalancers)(nil)

// PlanLoadBalancer says what EnsureLoadBalancer would change, with reads
// only: the same desired spec, compared field by field as specEqual does.
func (l *loadBalancers) PlanLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) ([]string, error) {
	spec, _, err := l.desired(svc, nodes)
	if err != nil {
		return nil, svcErr(svc, err)
	}
	lb, err := l.lookup(ctx, clusterOr(clusterName, l.defaultCluster), svc)
	if err != nil {
		return nil, svcErr(svc, err)
	}
	switch {
	case lb == nil:
		return []string{"load balancer created"}, nil
	case lb.Status == api.LBDeleting:
		return []string{"load balancer being deleted: created again once gone"}, nil
	}
	if added, _ := setDiff(lb.Backends, spec.Backends); len(added) > 0 {
		// EnsureLoadBalancer skips the backends whose instance is gone
		// (withLiveBackends): plan the same, or a Node whose machine was
		// just terminated is planned as a backend no write would add.
		exists, err := l.liveInstances(ctx)
		if err != nil {
			return nil, svcErr(svc, err)
		}
		spec.Backends = slices.DeleteFunc(spec.Backends, func(id string) bool { return !exists[id] })
	}
	return specChanges(lb.LoadBalancerSpec, spec), nil
}

// specChanges lists what differs from have to want, as "field: old → new".
func specChanges(have, want api.LoadBalancerSpec) []string {
	var out []string
	if !slices.Equal(have.Listeners, want.Listeners) {
		out = append(out, fmt.Sprintf("listeners: %v → %v", have.Listeners, want.Listeners))
	}
	if added, removed := setDiff(have.Backends, want.Backends); len(added)+len(removed) > 0 {
		out = append(out, fmt.Sprintf("backends: +[%s] -[%s]", strings.Join(added, ","), strings.Join(removed, ",")))
	}
	if added, removed := setDiff(have.SourceRanges, want.SourceRanges); len(added)+len(removed) > 0 {
		out = append(out, fmt.Sprintf("sourceRanges: +[%s] -[%s]", strings.Join(added, ","), strings.Join(removed, ",")))
	}
	if have.HealthCheck != want.HealthCheck {
		out = append(out, fmt.Sprintf("healthCheck: %+v → %+v", have.HealthCheck, want.HealthCheck))
	}
	if have.SessionAffinity != want.SessionAffinity {
		out = append(out, fmt.Sprintf("sessionAffinity: %q → %q", have.SessionAffinity, want.SessionAffinity))
	}
	if have.UDPIdleTimeoutMs != want.UDPIdleTimeoutMs {
		out = append(out, fmt.Sprintf("udpIdleTimeoutMs: %d → %d", have.UDPIdleTimeoutMs, want.UDPIdleTimeoutMs))
	}
	return out
}

func setDiff(have, want []string) (added, removed []string) {
	h, w := map[string]bool{}, map[string]bool{}
	for _, s := range have {
		h[s] = true
	}
	for _, s := range want {
		w[s] = true
		if !h[s] {
			added = append(added, s)
		}
	}
	for s := range h {
		if !w[s] {
			removed = append(removed, s)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed
}
