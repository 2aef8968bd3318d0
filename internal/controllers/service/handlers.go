package service

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

type queue = workqueue.TypedRateLimitingInterface[key]

// serviceHandler queues the Services whose event can matter to a load
// balancer.
func (c *Controller) serviceHandler() handler.TypedEventHandler[*corev1.Service, key] {
	class := c.cfg.LoadBalancerClass
	return handler.TypedFuncs[*corev1.Service, key]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*corev1.Service], q queue) {
			// Cleanup on add catches what a previous run left undone.
			if !wantsLoadBalancer(e.Object, class) && !needsCleanup(e.Object, class) {
				return
			}
			k := serviceKey(e.Object)
			// At a start or a takeover every Service comes from the
			// initial list, which controller-runtime queues at low
			// priority. Those still waiting for the cloud (no address
			// yet, or a deletion) go first, at the normal priority: a
			// standby that takes over creates the load balancers users
			// wait for before it re-checks those that already serve.
			if pq, ok := q.(priorityqueue.PriorityQueue[key]); ok && e.IsInInitialList && waitingForCloud(e.Object, class) {
				pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(0)}, k)
				return
			}
			q.Add(k)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*corev1.Service], q queue) {
			if serviceEventMatters(e.ObjectOld, e.ObjectNew, class) {
				q.Add(serviceKey(e.ObjectNew))
			}
		},
		// Deletion is handled when the deletion timestamp appears; a
		// delete event only needs the in-memory state dropped, which the
		// sync of a missing Service does.
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*corev1.Service], q queue) {
			q.Add(serviceKey(e.Object))
		},
	}
}

// nodeHandler keeps the node tracker current and tells the pacer about
// joining nodes and about the changes that can alter a load balancer's
// node set (see nodePacer for when the pass runs). A node that registers
// uninitialized is not such a change yet: its initialization (providerID,
// taint removed) follows, and that change schedules the pass.
func (c *Controller) nodeHandler() handler.TypedEventHandler[*corev1.Node, key] {
	return handler.TypedFuncs[*corev1.Node, key]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*corev1.Node], q queue) {
			c.nodes.upsert(e.Object)
			now, joining := c.now(), nodeUninitialized(e.Object)
			c.nodePacer.joined(q, e.Object.Name, joining, now)
			if !joining {
				c.nodePacer.changed(q, now)
			}
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*corev1.Node], q queue) {
			c.nodes.upsert(e.ObjectNew)
			now := c.now()
			c.nodePacer.joined(q, e.ObjectNew.Name, nodeUninitialized(e.ObjectNew), now)
			if nodeChangeTriggersSync(e.ObjectOld, e.ObjectNew) {
				c.nodePacer.changed(q, now)
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*corev1.Node], q queue) {
			c.nodes.remove(e.Object.Name)
			c.nodePacer.forget(e.Object.Name)
			c.nodePacer.changed(q, c.now())
		},
	}
}

// sliceHandler passes the EndpointSlice changes of Services whose load
// balancer targets endpoints to the endpoint pacer; other Services'
// slices cost a map lookup.
func (c *Controller) sliceHandler() handler.TypedEventHandler[*discoveryv1.EndpointSlice, key] {
	changed := func(s *discoveryv1.EndpointSlice, q queue) {
		svc, ok := sliceService(s)
		if !ok {
			return
		}
		if st := c.state.get(svc); st == nil || st.targets != targetEndpoints {
			// Not (yet) targeting endpoints: its next sync reads the
			// slices anyway.
			return
		}
		c.epPacer.changed(q, key{Service: svc}, c.now())
	}
	return handler.TypedFuncs[*discoveryv1.EndpointSlice, key]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*discoveryv1.EndpointSlice], q queue) {
			changed(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*discoveryv1.EndpointSlice], q queue) {
			if sliceChangeMatters(e.ObjectOld, e.ObjectNew) {
				changed(e.ObjectNew, q)
				if old, ok := sliceService(e.ObjectOld); ok && old != (types.NamespacedName{Namespace: e.ObjectNew.Namespace, Name: e.ObjectNew.Labels[discoveryv1.LabelServiceName]}) {
					changed(e.ObjectOld, q)
				}
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*discoveryv1.EndpointSlice], q queue) {
			changed(e.Object, q)
		},
	}
}

// nodePass queues every Service whose load balancer's applied node set
// differs from the current one for a hosts update. The updates run on the
// Service workers, in parallel, and never overlap a sync of the same
// Service. The queue is the one the pass came from.
func (c *Controller) nodePass(ctx context.Context, q queue) {
	c.metrics.nodeSyncs.Inc()
	cur := c.nodes.snapshot()
	keys := c.state.outdated(cur)
	for _, k := range keys {
		q.Add(key{Service: k})
	}
	klog.FromContext(ctx).V(2).Info("Node set changed", "nodes", len(cur.nodes), "loadBalancersToUpdate", len(keys),
		"loadBalancers", c.state.len())
}

// waitingForCloud reports whether svc waits for its load balancer (no
// address published yet) or for its cleanup.
func waitingForCloud(svc *corev1.Service, class string) bool {
	return needsCleanup(svc, class) || (wantsLoadBalancer(svc, class) && len(svc.Status.LoadBalancer.Ingress) == 0)
}
