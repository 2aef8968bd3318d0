package harness

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// Benchmark object names and places.
const (
	Namespace = "bench"
	Region    = "local-1"
	zones     = 3
)

// NodeName is the i-th node's (and instance's) name.
func NodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// Initialized reports whether the cloud node controller is done with n.
func Initialized(n *corev1.Node) bool {
	if n.Spec.ProviderID == "" {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == cloudproviderapi.TaintExternalCloudProvider {
			return false
		}
	}
	return true
}

// CreateInstances creates the named instances in localcloud (batches of
// api.MaxBatchCreate) and returns their ids by name.
func (cl *Cluster) CreateInstances(ctx context.Context, names []string) (map[string]string, error) {
	ids := make(map[string]string, len(names))
	for start := 0; start < len(names); start += api.MaxBatchCreate {
		end := min(start+api.MaxBatchCreate, len(names))
		reqs := make([]api.CreateInstanceRequest, 0, end-start)
		for i, n := range names[start:end] {
			reqs = append(reqs, api.CreateInstanceRequest{
				Name: n, Zone: Region + string(rune('a'+(start+i)%zones)), Region: Region, Type: "standard-2",
				Tags: map[string]string{"cluster": ClusterName},
			})
		}
		out, err := cl.Cloud.BatchCreateInstances(ctx, reqs)
		if err != nil {
			return nil, fmt.Errorf("harness: create instances: %w", err)
		}
		for _, in := range out {
			ids[in.Name] = in.ID
		}
	}
	return ids, nil
}

// CreateNodes registers the named nodes with up to 64 requests in flight,
// each with the labels labels gives it (nil: none).
func (cl *Cluster) CreateNodes(ctx context.Context, names []string, labels map[string]map[string]string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for _, n := range names {
		g.Go(func() error {
			// The test bed's node: the uninitialized taint, no providerID, no
			// addresses, annotated for kwok to keep it Ready.
			_, err := localcluster.CreateNode(gctx, cl.Kube, n, localcluster.NodeOptions{Labels: labels[n]})
			return err
		})
	}
	return g.Wait()
}

// ServiceName is the i-th benchmark Service's name.
func ServiceName(i int) string { return fmt.Sprintf("svc-%04d", i) }

// NewLBService returns a LoadBalancer Service with one UDP port. UDP keeps
// localcloud's data plane from health-checking every backend of every load
// balancer, which would load the machine far more than the controllers.
func NewLBService(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 8053, TargetPort: intstr.FromInt32(8053)}},
		},
	}
}

// EnsureNamespace creates the benchmark namespace.
func (cl *Cluster) EnsureNamespace(ctx context.Context) error {
	_, err := cl.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("harness: namespace: %w", err)
	}
	return nil
}

// CreateService creates one benchmark Service.
func (cl *Cluster) CreateService(ctx context.Context, name string) error {
	if _, err := cl.Kube.CoreV1().Services(Namespace).Create(ctx, NewLBService(name), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("harness: create service %s: %w", name, err)
	}
	return nil
}

// CreateServices creates the named Services with up to 32 in flight.
func (cl *Cluster) CreateServices(ctx context.Context, names []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for _, n := range names {
		g.Go(func() error { return cl.CreateService(gctx, n) })
	}
	return g.Wait()
}

// HasIngress reports whether the Service's load balancer is published.
func HasIngress(s *corev1.Service) bool { return len(s.Status.LoadBalancer.Ingress) > 0 }

// Tracker records, from an informer, when each object first satisfied a
// predicate.
type Tracker struct {
	mu      sync.Mutex
	done    map[string]time.Time
	changed chan struct{}
	stop    chan struct{}
}

// TrackNodes follows every Node and records when it is initialized.
func (cl *Cluster) TrackNodes() *Tracker {
	return track(cl.Kube, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().Nodes().Informer()
	},
		func(o any) (string, bool) {
			n, ok := o.(*corev1.Node)
			return nameOf(n, ok), ok && Initialized(n)
		})
}

// TrackServices follows the benchmark Services and records when each has
// an ingress.
func (cl *Cluster) TrackServices() *Tracker {
	return track(cl.Kube, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().Services().Informer()
	},
		func(o any) (string, bool) {
			s, ok := o.(*corev1.Service)
			return nameOf(s, ok), ok && s.Namespace == Namespace && HasIngress(s)
		})
}

func nameOf(o metav1.Object, ok bool) string {
	if !ok {
		return ""
	}
	return o.GetName()
}

func track(cs kubernetes.Interface, inf func(informers.SharedInformerFactory) cache.SharedIndexInformer, pred func(any) (string, bool)) *Tracker {
	t := &Tracker{done: map[string]time.Time{}, changed: make(chan struct{}, 1), stop: make(chan struct{})}
	f := informers.NewSharedInformerFactory(cs, 0)
	see := func(o any) {
		name, ok := pred(o)
		if !ok {
			return
		}
		now := time.Now()
		t.mu.Lock()
		if _, seen := t.done[name]; !seen {
			t.done[name] = now
		}
		t.mu.Unlock()
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
	_, _ = inf(f).AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, o any) { see(o) },
	})
	f.Start(t.stop)
	return t
}

// Stop ends the informer.
func (t *Tracker) Stop() { close(t.stop) }

// Count returns how many objects satisfied the predicate so far.
func (t *Tracker) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.done)
}

// Wait blocks until every named object satisfied the predicate and returns
// the time the last one did. alive is checked on every change and every
// second, so that a dead contestant fails the wait at once.
func (t *Tracker) Wait(ctx context.Context, names []string, timeout time.Duration, alive func() error) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if last, ok := t.all(names); ok {
			return last, nil
		}
		if err := alive(); err != nil {
			return time.Time{}, err
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("harness: %d of %d objects done: %w", t.countOf(names), len(names), ctx.Err())
		case <-t.changed:
		case <-tick.C:
		}
	}
}

func (t *Tracker) all(names []string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var last time.Time
	for _, n := range names {
		at, ok := t.done[n]
		if !ok {
			return time.Time{}, false
		}
		if at.After(last) {
			last = at
		}
	}
	return last, true
}

func (t *Tracker) countOf(names []string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, name := range names {
		if _, ok := t.done[name]; ok {
			n++
		}
	}
	return n
}
