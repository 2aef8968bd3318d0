package faults

import (
	"context"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// convergeTimeout bounds the wait for the invariants after a fault: far
// above what any scenario needs (see docs/reliability.md), so that only a
// system that does not recover fails.
const convergeTimeout = 3 * time.Minute

// converged checks the invariants the suite promises after every fault:
//
//   - the Nodes are exactly those whose instance exists (none deleted
//     for any other reason, every gone one deleted), all initialized;
//   - the cluster's load balancers are exactly one per LoadBalancer
//     Service (none leaked, none duplicated), each active, with the
//     Service's name and the live Nodes' instances as backends;
//   - every LoadBalancer Service publishes its load balancer's VIP, and
//     no Service is stuck deleting.
//
// It returns why not when they do not hold.
func (w *world) converged(ctx context.Context) (bool, string) {
	w.mu.Lock()
	want := maps.Clone(w.nodes)
	w.mu.Unlock()
	backends, why := w.nodesConverged(ctx, want)
	if why != "" {
		return false, why
	}
	if why := w.otherUntouched(ctx); why != "" {
		return false, why
	}
	svcs, err := w.cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, "list services: " + err.Error()
	}
	lbs, err := w.cloud.ListAllLoadBalancers(ctx, lcclient.ListOptions{Cluster: clusterName})
	if err != nil {
		return false, "list load balancers: " + err.Error()
	}
	byUID := map[string][]api.LoadBalancer{}
	for _, lb := range lbs {
		byUID[lb.Tags[api.TagServiceUID]] = append(byUID[lb.Tags[api.TagServiceUID]], lb)
	}
	for i := range svcs.Items {
		s := &svcs.Items[i]
		if s.DeletionTimestamp != nil {
			return false, fmt.Sprintf("service %s/%s still deleting (finalizers %v)", s.Namespace, s.Name, s.Finalizers)
		}
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		mine := byUID[string(s.UID)]
		delete(byUID, string(s.UID))
		if why := serviceConverged(s, mine, backends); why != "" {
			return false, why
		}
	}
	for uid, lbs := range byUID {
		return false, fmt.Sprintf("load balancer %s (%s, status %s) leaked: no LoadBalancer Service has uid %q", lbs[0].Name, lbs[0].ID, lbs[0].Status, uid)
	}
	return true, ""
}

// nodesConverged compares the Nodes with want (name → instance id) and
// returns the instance ids they put behind load balancers.
func (w *world) nodesConverged(ctx context.Context, want map[string]string) ([]string, string) {
	nodes, err := w.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "list nodes: " + err.Error()
	}
	var ids []string
	w.mu.Lock()
	foreign := maps.Clone(w.foreign)
	w.mu.Unlock()
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if pid, ok := foreign[n.Name]; ok {
			delete(foreign, n.Name)
			if why := foreignUntouched(n, pid); why != "" {
				return nil, why
			}
			continue
		}
		id, ok := want[n.Name]
		if !ok {
			return nil, fmt.Sprintf("node %s still exists, its instance is gone", n.Name)
		}
		delete(want, n.Name)
		if n.Spec.ProviderID != lcprovider.ProviderID(id) {
			return nil, fmt.Sprintf("node %s has providerID %q, want %q", n.Name, n.Spec.ProviderID, lcprovider.ProviderID(id))
		}
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider }) {
			return nil, fmt.Sprintf("node %s is not initialized", n.Name)
		}
		ids = append(ids, id)
	}
	if len(want) > 0 {
		return nil, fmt.Sprintf("nodes deleted although their instance exists: %v", slices.Sorted(maps.Keys(want)))
	}
	if len(foreign) > 0 {
		return nil, fmt.Sprintf("foreign nodes deleted: %v", slices.Sorted(maps.Keys(foreign)))
	}
	slices.Sort(ids)
	return ids, ""
}

// foreignUntouched checks a Node of another platform: as registered
// (providerID), still waiting for its own platform's initialization, never
// tainted shut down.
func foreignUntouched(n *corev1.Node, providerID string) string {
	switch {
	case n.Spec.ProviderID != providerID:
		return fmt.Sprintf("foreign node %s: providerID %q, want %q", n.Name, n.Spec.ProviderID, providerID)
	case !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider }):
		return fmt.Sprintf("foreign node %s was initialized", n.Name)
	case slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintNodeShutdown }):
		return fmt.Sprintf("foreign node %s was tainted shut down", n.Name)
	case len(n.Status.Addresses) != 0:
		return fmt.Sprintf("foreign node %s got addresses %v", n.Name, n.Status.Addresses)
	}
	return ""
}

func serviceConverged(s *corev1.Service, lbs []api.LoadBalancer, backends []string) string {
	ref := s.Namespace + "/" + s.Name
	switch {
	case len(lbs) == 0:
		return "service " + ref + " has no load balancer"
	case len(lbs) > 1:
		return fmt.Sprintf("service %s has %d load balancers (duplicated)", ref, len(lbs))
	}
	lb := lbs[0]
	if name := cloudprovider.DefaultLoadBalancerName(s); lb.Name != name {
		return fmt.Sprintf("service %s: load balancer named %q, want %q", ref, lb.Name, name)
	}
	if lb.Status != api.LBActive {
		return fmt.Sprintf("service %s: load balancer %s is %s %s", ref, lb.ID, lb.Status, lb.StatusMessage)
	}
	if got := slices.Sorted(slices.Values(lb.Backends)); !slices.Equal(got, backends) {
		return fmt.Sprintf("service %s: load balancer backends %v, want %v", ref, got, backends)
	}
	ing := s.Status.LoadBalancer.Ingress
	if len(ing) != 1 || ing[0].IP != lb.VIP {
		return fmt.Sprintf("service %s: ingress %v, want the load balancer's VIP %s", ref, ing, lb.VIP)
	}
	return ""
}

// panicTrace matches what a Go panic or fatal error leaves in a log, and
// the "Observed a panic" line of a recovered one (apimachinery's
// HandleCrash, controller-runtime's reconciler recovery).
var panicTrace = regexp.MustCompile(`(?m)^panic: |^fatal error: |^goroutine \d+ \[|[Oo]bserved a panic`)

// noPanics fails t for every log of the world holding a panic.
func (w *world) noPanics(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	logs := slices.Clone(w.logs)
	w.mu.Unlock()
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("read %s: %v", p, err)
			continue
		}
		if loc := panicTrace.FindIndex(b); loc != nil {
			start := max(0, loc[0]-2000)
			end := min(len(b), loc[1]+3000)
			t.Errorf("panic in %s:\n%s", p, b[start:end])
		}
	}
}

// settle waits for the invariants after a fault cleared at since, logs
// the time they took as a parseable line, checks the logs for panics and
// returns the time.
func (w *world) settle(t *testing.T, scenario string, since time.Time) time.Duration {
	t.Helper()
	waitFor(w.ctx, t, scenario+" to converge", convergeTimeout, w.converged)
	d := time.Since(since)
	t.Logf("fault-converged scenario=%s seconds=%.2f", scenario, d.Seconds())
	w.noPanics(t)
	return d
}
