package sandbox

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// The sandbox plays the machines' kubelets: a running instance of the
// cluster has a registered node whose heartbeats kwok sends (it renews the
// node's Lease); a stopped or deleted instance's kubelet is silent. kwok
// has no switch per node, but it only renews a Lease it can hold: holding
// the Lease under another name, without renewing it, silences the node,
// and deleting that Lease lets kwok take the node back.
const (
	silentHolder = "stratus-sandbox/machine-not-running"
	// silentFor keeps kwok from taking a silent node's Lease back: kwok
	// only acquires a Lease held by another holder once it has expired.
	silentFor = int32(math.MaxInt32 / 2)
)

// kubelets keeps nodes following the cluster's instances.
type kubelets struct {
	s      *sandbox
	nodes  corelisters.NodeLister
	leases coordlisters.LeaseNamespaceLister
	gen    uint64
}

// startNodes starts watching the cluster's instances, registers the nodes
// of the running ones (as kubelets with --cloud-provider=external do),
// starts kwok for their heartbeats and the node monitor that marks silent
// nodes, then keeps all of it following the instances.
func (s *sandbox) startNodes(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(s.kube, 0)
	leaseFactory := informers.NewSharedInformerFactoryWithOptions(s.kube, 0, informers.WithNamespace(corev1.NamespaceNodeLease))
	k := &kubelets{s: s, nodes: factory.Core().V1().Nodes().Lister(),
		leases: leaseFactory.Coordination().V1().Leases().Lister().Leases(corev1.NamespaceNodeLease)}
	factory.Start(ctx.Done())
	leaseFactory.Start(ctx.Done())
	for _, f := range []informers.SharedInformerFactory{factory, leaseFactory} {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("sandbox: %v cache did not sync", typ)
			}
		}
	}
	if err := k.pass(ctx, 0); err != nil {
		return err
	}
	kc := filepath.Join(s.state, "kubeconfig")
	// Kubelets renew their Lease every quarter of its duration (40s): a
	// grace period shortened below that would see live nodes go silent.
	args := append(localcluster.KwokArgs(kc, s.writeKwokStages()), "--node-lease-duration-seconds="+strconv.Itoa(s.leaseSeconds()))
	if _, err := s.superviseAPIClient(ctx, "kwok", func() (*child, error) {
		return startChild("kwok", s.logs, filepath.Join(s.o.BinDir, "kwok"), args...)
	}); err != nil {
		return err
	}
	m := newNodeMonitor(s.kube, k.nodes, k.leases, s.o.NodeMonitorGracePeriod)
	go func() {
		defer factory.Shutdown()
		defer leaseFactory.Shutdown()
		go m.run(ctx, s.o.NodeMonitorPeriod)
		k.run(ctx)
	}()
	return nil
}

// leaseSeconds is the node Lease duration of kwok's and the real nodes'
// kubelets: they renew every quarter of it, which must stay within the
// node monitor's grace period.
func (s *sandbox) leaseSeconds() int {
	return min(40, max(4, int(s.o.NodeMonitorGracePeriod.Seconds())))
}

// run follows the instances until ctx ends; each answer of localcloud's
// watch (a change, or its wait ending) is one pass.
func (k *kubelets) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("kubelets")
	for ctx.Err() == nil {
		if err := k.pass(ctx, k.gen); err != nil && ctx.Err() == nil {
			logger.Error(err, "Following instances; retrying")
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// pass waits for a change after generation after, then brings every node
// of the cluster in line with its instance.
func (k *kubelets) pass(ctx context.Context, after uint64) error {
	w, err := k.s.cloud.WatchInstances(ctx, after, map[string]string{api.TagCluster: clusterName})
	if err != nil {
		return fmt.Errorf("sandbox: watch instances: %w", err)
	}
	// In parallel, as a thousand kubelets register at once; each node is
	// touched only when it is out of line with its machine.
	var mu sync.Mutex
	var errs []error
	var g errgroup.Group
	g.SetLimit(32)
	for name, running := range machines(w.Items) {
		g.Go(func() error {
			if err := k.follow(ctx, name, running); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if len(errs) > 0 {
		// The generation is not advanced: the next pass retries at once.
		return fmt.Errorf("sandbox: %d nodes not in line with their instances, first: %w", len(errs), errs[0])
	}
	k.gen = w.Generation
	return nil
}

// machines maps each instance name to whether a machine of that name runs.
// A name reused after a delete has a terminated record and a live one: the
// live one counts.
func machines(items []api.Instance) map[string]bool {
	out := map[string]bool{}
	for _, in := range items {
		out[in.Name] = out[in.Name] || in.State == api.InstanceRunning
	}
	return out
}

// follow makes one node match its machine: a running machine's node is
// registered and heard from; any other's is silent (or absent).
func (k *kubelets) follow(ctx context.Context, name string, running bool) error {
	if n := k.s.realNode(name); n != nil {
		return k.s.followRealNode(ctx, n, running)
	}
	_, err := k.nodes.Get(name)
	exists := err == nil
	if running && !exists {
		if _, err := localcluster.CreateNode(ctx, k.s.kube, name, localcluster.NodeOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Registered the node of a running instance", "node", name)
	}
	lease, err := k.leases.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	silent := lease != nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity == silentHolder
	switch {
	case running && silent:
		// The machine is back: its kubelet (kwok) takes the node again.
		err := k.s.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &lease.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("release the lease of node %s: %w", name, err)
		}
	case !running && exists && !silent:
		return k.silence(ctx, name, lease)
	}
	return nil
}

// silence holds the node's Lease without renewing it, so its last renewal
// stays where the machine stopped and the node monitor sees it go quiet.
func (k *kubelets) silence(ctx context.Context, name string, lease *coordinationv1.Lease) error {
	holder, d := silentHolder, silentFor
	leases := k.s.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	if lease == nil {
		now := metav1.NewMicroTime(time.Now())
		_, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &d, RenewTime: &now},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("silence node %s: %w", name, err)
		}
		return nil
	}
	next := lease.DeepCopy()
	next.Spec.HolderIdentity, next.Spec.LeaseDurationSeconds = &holder, &d
	if _, err := leases.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		// A conflict is kwok renewing meanwhile: the next pass retries.
		return fmt.Errorf("silence node %s: %w", name, err)
	}
	klog.FromContext(ctx).V(2).Info("Silenced the node of an instance that is not running", "node", name)
	return nil
}
