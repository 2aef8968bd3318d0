package e2e

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/stratus-ccm/stratus/internal/sandbox"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// trafficCount is one VIP's requests.
type trafficCount struct {
	ok, failed int
	first      error
}

// traffic asks every VIP without pause until stopped.
type traffic struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	counts map[string]*trafficCount
}

// startTraffic asks each of vips (Service name to VIP) from the machine,
// a client outside the nodes' range, one request at a time, every 50 ms:
// a TCP greeting read to its end, or a UDP datagram echoed.
func startTraffic(ctx context.Context, vips map[string]string) *traffic {
	ctx, cancel := context.WithCancel(ctx)
	tr := &traffic{cancel: cancel, counts: map[string]*trafficCount{}}
	for _, s := range upgradeServices {
		c := &trafficCount{}
		tr.counts[s.name] = c
		tr.wg.Add(1)
		go func() {
			defer tr.wg.Done()
			for ctx.Err() == nil {
				err := askVIP(ctx, s.protocol, vips[s.name], s.port)
				tr.mu.Lock()
				switch {
				case ctx.Err() != nil:
				case err != nil:
					c.failed++
					if c.first == nil {
						c.first = fmt.Errorf("%s: %w", time.Now().Format(time.StampMilli), err)
					}
				default:
					c.ok++
				}
				tr.mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
	}
	return tr
}

func (tr *traffic) stop() map[string]trafficCount {
	tr.cancel()
	tr.wg.Wait()
	out := map[string]trafficCount{}
	for k, c := range tr.counts {
		out[k] = *c
	}
	return out
}

// askVIP makes one request to a demo pod through vip:port.
func askVIP(ctx context.Context, protocol corev1.Protocol, vip string, port int32) error {
	if protocol == corev1.ProtocolTCP {
		_, err := sandbox.Probe(ctx, vip, int(port))
		return err
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "udp", net.JoinHostPort(vip, strconv.Itoa(int(port))))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	msg := "upgrade " + strconv.FormatInt(time.Now().UnixNano(), 10)
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write([]byte(msg)); err != nil {
		return err
	}
	buf := make([]byte, 512)
	n, err := conn.Read(buf)
	if err != nil {
		return fmt.Errorf("udp %s:%d: %w", vip, port, err)
	}
	if string(buf[:n]) != msg {
		return fmt.Errorf("udp %s:%d echoed %q, want %q", vip, port, buf[:n], msg)
	}
	return nil
}

// lbState is what must not change of a load balancer across an upgrade.
type lbState struct {
	ID, VIP            string
	Created, UpdatedAt time.Time
}

// loadBalancers lists the cluster's load balancers in localcloud, by name.
func (u *upgrade) loadBalancers() map[string]lbState {
	u.t.Helper()
	lbs, err := u.lc.ListAllLoadBalancers(u.ctx, lcclient.ListOptions{Cluster: u.env["LOCALCLOUD_CLUSTER"]})
	if err != nil {
		u.t.Fatal(err)
	}
	out := map[string]lbState{}
	for _, lb := range lbs {
		out[lb.Name] = lbState{ID: lb.ID, VIP: lb.VIP, Created: lb.CreatedAt, UpdatedAt: lb.UpdatedAt}
	}
	if len(out) < len(upgradeServices) {
		u.t.Fatalf("load balancers %v, want at least the test's %d", out, len(upgradeServices))
	}
	return out
}

func diffLBs(before, after map[string]lbState) string {
	var d []string
	for name, b := range before {
		if a, ok := after[name]; !ok {
			d = append(d, name+" deleted")
		} else if a != b {
			d = append(d, fmt.Sprintf("%s %+v became %+v", name, b, a))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			d = append(d, name+" created")
		}
	}
	return strings.Join(d, "; ")
}

// watcher follows the Lease and the Nodes through one step.
type watcher struct {
	cancel context.CancelFunc
	done   chan struct{}

	transitions int
	holders     []string
	nodeChanges []string
}

// nodeFacts are the parts of a Node a CCM writes or a taint shows.
type nodeFacts struct {
	Spec      corev1.NodeSpec
	Labels    map[string]string
	Addresses []corev1.NodeAddress
}

func factsOf(n *corev1.Node) nodeFacts {
	return nodeFacts{Spec: n.Spec, Labels: n.Labels, Addresses: n.Status.Addresses}
}

// watch starts watching the Lease (each new holder, and leaseTransitions)
// and every Node (any change of spec, labels or addresses) from now.
func (u *upgrade) watch() *watcher {
	u.t.Helper()
	ctx, cancel := context.WithCancel(u.ctx)
	w := &watcher{cancel: cancel, done: make(chan struct{})}
	lease, err := u.cs.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
	if err != nil {
		u.t.Fatal(err)
	}
	nodes, err := u.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		u.t.Fatal(err)
	}
	lw, err := u.cs.CoordinationV1().Leases("kube-system").Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=cloud-controller-manager", ResourceVersion: lease.ResourceVersion})
	if err != nil {
		u.t.Fatal(err)
	}
	nw, err := u.cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: nodes.ResourceVersion})
	if err != nil {
		u.t.Fatal(err)
	}
	known := map[string]nodeFacts{}
	for i := range nodes.Items {
		known[nodes.Items[i].Name] = factsOf(&nodes.Items[i])
	}
	startTransitions := ptrValue(lease.Spec.LeaseTransitions)
	holder := ptrValue(lease.Spec.HolderIdentity)
	go func() {
		defer close(w.done)
		defer lw.Stop()
		defer nw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-lw.ResultChan():
				if !ok {
					w.nodeChanges = append(w.nodeChanges, "the Lease watch ended early")
					return
				}
				if l, isLease := ev.Object.(*coordinationv1.Lease); isLease {
					if h := ptrValue(l.Spec.HolderIdentity); h != "" && h != holder {
						w.holders = append(w.holders, h)
						holder = h
					}
					w.transitions = int(ptrValue(l.Spec.LeaseTransitions) - startTransitions)
				}
			case ev, ok := <-nw.ResultChan():
				if !ok {
					w.nodeChanges = append(w.nodeChanges, "the Node watch ended early")
					return
				}
				if n, isNode := ev.Object.(*corev1.Node); isNode {
					if ev.Type != watch.Modified {
						w.nodeChanges = append(w.nodeChanges, fmt.Sprintf("%s %s", ev.Type, n.Name))
						continue
					}
					if f := factsOf(n); !reflect.DeepEqual(f, known[n.Name]) {
						w.nodeChanges = append(w.nodeChanges, fmt.Sprintf("%s: %+v became %+v", n.Name, known[n.Name], f))
						known[n.Name] = f
					}
				}
			}
		}
	}()
	return w
}

func (w *watcher) stop() (transitions int, holders, nodeChanges []string) {
	w.cancel()
	<-w.done
	return w.transitions, w.holders, w.nodeChanges
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
