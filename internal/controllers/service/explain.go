package service

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
)

// maxNamesExplained bounds the node or Service names one explain line lists.
const maxNamesExplained = 20

func serviceRef(k types.NamespacedName) explain.Ref {
	return explain.Ref{Kind: explain.KindService, Namespace: k.Namespace, Name: k.Name}
}

// report tells what one Service's sync came to: to the explain record (a
// deleted Service's entry is dropped) and in the Service's conditions.
func (c *Controller) report(ctx context.Context, key types.NamespacedName, o kit.Outcome) {
	svc := &corev1.Service{}
	if err := c.client.Get(ctx, key, svc); err != nil {
		if apierrors.IsNotFound(err) {
			c.explain.Forget(serviceRef(key))
			return
		}
		klog.FromContext(ctx).Error(err, "Reading the Service after its sync failed; its conditions and explain record wait for the next sync")
		return
	}
	if w := c.state.takeWritten(key); w != nil && w.UID == svc.UID {
		// The cache has not seen this sync's write yet.
		svc = w
	}
	c.explain.Synced(serviceRef(key), ControllerName, o.Explain())
	c.reportConditions(ctx, svc, o)
}

// describeService says which nodes the Service's load balancer targets.
func (c *Controller) describeService(_ context.Context, ref explain.Ref) []string {
	st := c.state.get(types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name})
	if st == nil {
		return nil
	}
	if st.targets == targetEndpoints {
		var eps []string
		for port, list := range st.endpoints {
			for _, e := range list {
				eps = append(eps, fmt.Sprintf("%s=%s", port, net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port)))))
			}
		}
		sort.Strings(eps)
		return []string{
			"load balancer ingress: " + ingressString(st.status.Ingress),
			fmt.Sprintf("load balancer targets %d endpoints (endpoint targets): %s", len(eps), strings.Join(firstN(eps, maxNamesExplained), ", ")),
		}
	}
	names := sortedKeys(st.nodes.ids)
	lines := []string{
		"load balancer ingress: " + ingressString(st.status.Ingress),
		fmt.Sprintf("load balancer targets %d nodes: %s", len(names), strings.Join(firstN(names, maxNamesExplained), ", ")),
	}
	if st.fallback != "" {
		lines = append(lines, "it targets nodes, not the Service's endpoints: "+st.fallback)
	}
	if cur := c.nodes.snapshot(); !sameNodes(st.nodes, cur) {
		lines = append(lines, fmt.Sprintf("the eligible node set has changed since (%d nodes now); the next node pass updates it", len(cur.ids)))
	}
	return lines
}

// describeNode says which load balancers include the node and, when it is
// left out, which predicate excludes it.
func (c *Controller) describeNode(_ context.Context, ref explain.Ref) []string {
	var in []string
	for k, st := range c.state.all() {
		if _, ok := st.nodes.ids[ref.Name]; ok {
			in = append(in, k.String())
		}
	}
	slices.Sort(in)
	var lines []string
	if n := c.nodes.get(ref.Name); n == nil {
		lines = append(lines, "not in the service controller's node cache")
	} else if why := nodeExclusion(n); why != "" {
		lines = append(lines, "excluded from load balancers: "+why)
	} else {
		lines = append(lines, "eligible for load balancers")
	}
	if len(in) == 0 {
		return append(lines, "included in no load balancer")
	}
	return append(lines, fmt.Sprintf("included in %d load balancers: %s", len(in), strings.Join(firstN(in, maxNamesExplained), ", ")))
}

// nodeExclusion names the predicate of nodeEligible that leaves n out of
// every load balancer, or "" when none does.
func nodeExclusion(n *corev1.Node) string {
	switch {
	case !nodeNotDeleted(n):
		return "the Node is being deleted"
	case !nodeIncluded(n):
		return fmt.Sprintf("label %s=%q", corev1.LabelNodeExcludeBalancers, n.Labels[corev1.LabelNodeExcludeBalancers])
	case !nodeUntainted(n):
		return "taint " + ToBeDeletedTaint + " (the cluster autoscaler is removing it)"
	default:
		return ""
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func firstN(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(slices.Clone(names[:n]), fmt.Sprintf("… (%d more)", len(names)-n))
}
