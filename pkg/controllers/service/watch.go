package service

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodeSyncKey is the single key of the node queue: every node change
// schedules the same pass, so changes within NodeSyncDelay coalesce.
const nodeSyncKey = "nodes"

// Informers is the part of controller-runtime's cache the controller
// watches through.
type Informers interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...crcache.InformerGetOption) (crcache.Informer, error)
}

// Watch registers the controller's handlers on the Service and Node
// informers. Call it once, before Start.
func (c *Controller) Watch(ctx context.Context, inf Informers) error {
	svcInf, err := inf.GetInformer(ctx, &v1.Service{})
	if err != nil {
		return fmt.Errorf("service controller: service informer: %w", err)
	}
	nodeInf, err := inf.GetInformer(ctx, &v1.Node{})
	if err != nil {
		return fmt.Errorf("service controller: node informer: %w", err)
	}
	// Nodes first: Start waits for both, but registering nodes first makes
	// their replay of existing objects start first too.
	nodeReg, err := nodeInf.AddEventHandler(c.nodeHandler())
	if err != nil {
		return fmt.Errorf("service controller: node handler: %w", err)
	}
	svcReg, err := svcInf.AddEventHandler(c.serviceHandler())
	if err != nil {
		return fmt.Errorf("service controller: service handler: %w", err)
	}
	c.synced = append(c.synced, nodeReg.HasSynced, svcReg.HasSynced)
	return nil
}

func (c *Controller) serviceHandler() toolscache.ResourceEventHandler {
	class := c.cfg.LoadBalancerClass
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			// Cleanup on add catches what a previous run left undone.
			if svc, ok := obj.(*v1.Service); ok && (wantsLoadBalancer(svc, class) || needsCleanup(svc, class)) {
				c.enqueue(svc)
			}
		},
		UpdateFunc: func(oldObj, curObj any) {
			old, ok1 := oldObj.(*v1.Service)
			cur, ok2 := curObj.(*v1.Service)
			if ok1 && ok2 && serviceEventMatters(old, cur, class) {
				c.enqueue(cur)
			}
		},
		// Deletion is handled when the deletion timestamp appears; a
		// delete event only needs the in-memory state dropped, which the
		// sync of a missing Service does.
		DeleteFunc: func(obj any) {
			if svc, ok := obj.(*v1.Service); ok {
				c.enqueue(svc)
			} else if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				c.queue.Add(t.Key)
			}
		},
	}
}

func (c *Controller) nodeHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*v1.Node); ok {
				c.nodes.upsert(n)
				c.scheduleNodeSync()
			}
		},
		UpdateFunc: func(oldObj, curObj any) {
			old, ok1 := oldObj.(*v1.Node)
			cur, ok2 := curObj.(*v1.Node)
			if !ok1 || !ok2 {
				return
			}
			c.nodes.upsert(cur)
			if nodeChangeTriggersSync(old, cur) {
				c.scheduleNodeSync()
			}
		},
		DeleteFunc: func(obj any) {
			switch n := obj.(type) {
			case *v1.Node:
				c.nodes.remove(n.Name)
			case toolscache.DeletedFinalStateUnknown:
				c.nodes.remove(n.Key)
			default:
				return
			}
			c.scheduleNodeSync()
		},
	}
}

// scheduleNodeSync asks for a pass over the load balancers. The delaying
// queue keeps one pending entry per key at the earliest time asked, so a
// burst of node events leads to one pass NodeSyncDelay after the first.
func (c *Controller) scheduleNodeSync() {
	c.nodeQueue.AddAfter(nodeSyncKey, c.cfg.NodeSyncDelay)
}

// processNodeSync runs one pass: every load balancer whose applied node
// set differs from the current one is queued for a hosts update. The
// updates themselves run on the Service workers, in parallel, and never
// overlap a sync of the same Service.
func (c *Controller) processNodeSync(ctx context.Context) bool {
	key, quit := c.nodeQueue.Get()
	if quit {
		return false
	}
	defer c.nodeQueue.Done(key)
	c.metrics.nodeSyncs.Inc()
	cur := c.nodes.snapshot()
	keys := c.state.outdated(cur)
	for _, k := range keys {
		c.queue.Add(k)
	}
	klog.FromContext(ctx).V(2).Info("Node set changed", "nodes", len(cur.nodes), "loadBalancersToUpdate", len(keys),
		"loadBalancers", c.state.len())
	return true
}

// CacheReader reads Services from a controller-runtime cache (or client).
type CacheReader struct{ Reader client.Reader }

// GetService implements ServiceReader.
func (r CacheReader) GetService(ctx context.Context, namespace, name string) (*v1.Service, error) {
	svc := &v1.Service{}
	if err := r.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, svc); err != nil {
		return nil, err
	}
	return svc, nil
}
