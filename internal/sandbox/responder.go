package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
)

// responder stands in for kube-proxy and the pods behind a Service: on
// each node's internal address it listens on the node ports of every
// LoadBalancer Service (with externalTrafficPolicy Local, only on the
// nodes its stand-in pods run on, see PodNodes) and answers, TCP with a line (or a minimal HTTP
// response) naming the node and the Service, UDP as an echo. That is all
// the sandbox needs to show traffic arriving through a load balancer; no
// packets are proxied anywhere else.
type responder struct {
	// realPods: Services with a selector have real pods behind
	// kube-proxy (--real-nodes), so the responder leaves them alone.
	realPods  bool
	mu        sync.Mutex
	listeners map[string]func() // key: proto/ip:port/service
}

func (s *sandbox) startResponder(ctx context.Context) error {
	r := &responder{listeners: map[string]func(){}, realPods: s.o.RealNodes > 0}
	// Watches, not polls: with 1,000 nodes a periodic list would cost more
	// than everything else the sandbox does. Node addresses come from the
	// Node objects, i.e. from what the CCM wrote, as kube-proxy would see them.
	factory := informers.NewSharedInformerFactory(s.kube, 0)
	nodes := factory.Core().V1().Nodes().Lister()
	services := factory.Core().V1().Services().Lister()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("responder: %v cache did not sync", typ)
		}
	}
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		defer r.closeAll()
		defer factory.Shutdown()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.sync(ctx, nodes, services)
			}
		}
	}()
	return nil
}

type endpoint struct {
	proto, ip, node, service string
	port                     int32
}

// key names the node too: a machine created after another was deleted may
// get its internal address, and must answer with its own name.
func (e endpoint) key() string {
	return e.proto + "/" + net.JoinHostPort(e.ip, strconv.Itoa(int(e.port))) + "/" + e.service + "/" + e.node
}

func (r *responder) sync(ctx context.Context, nodeLister corelisters.NodeLister, svcLister corelisters.ServiceLister) {
	nodes, _ := nodeLister.List(labels.Everything())
	svcs, _ := svcLister.List(labels.Everything())
	want := map[string]endpoint{}
	for _, svc := range svcs {
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || (r.realPods && len(svc.Spec.Selector) > 0) {
			continue
		}
		addEndpoints(want, svc, nodes)
	}
	r.apply(ctx, want)
}

// addEndpoints adds to want the node ports (and health-check node port)
// svc's stand-in pods answer on, on every kwok node that serves it.
func addEndpoints(want map[string]endpoint, svc *corev1.Service, nodes []*corev1.Node) {
	name := svc.Namespace + "/" + svc.Name
	local := svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	pods := PodNodes(svc, nodes)
	for _, n := range nodes {
		if n.Labels[RealNodeLabel] == "true" {
			continue // kube-proxy answers there
		}
		ip := internalIP(n)
		// With externalTrafficPolicy Local, kube-proxy answers only
		// where the Service has endpoints: elsewhere the node port
		// and the health-check node port are silent, so the load
		// balancer's health checks leave those nodes out.
		if ip == "" || (local && !pods[n.Name]) {
			continue
		}
		for _, p := range svc.Spec.Ports {
			if p.NodePort == 0 {
				continue
			}
			e := endpoint{proto: string(p.Protocol), ip: ip, node: n.Name, service: name, port: p.NodePort}
			want[e.key()] = e
		}
		if hc := svc.Spec.HealthCheckNodePort; hc != 0 {
			e := endpoint{proto: "TCP", ip: ip, node: n.Name, service: name, port: hc}
			want[e.key()] = e
		}
	}
}

// apply stops the listeners no longer wanted and starts the missing ones.
func (r *responder) apply(ctx context.Context, want map[string]endpoint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, stop := range r.listeners {
		if _, ok := want[k]; !ok {
			stop()
			delete(r.listeners, k)
		}
	}
	for k, e := range want {
		if _, ok := r.listeners[k]; ok {
			continue
		}
		stop, err := listen(e)
		if err != nil {
			klog.FromContext(ctx).V(2).Info("node-port responder cannot listen", "endpoint", k, "err", err)
			continue
		}
		r.listeners[k] = stop
	}
}

// PodNodesAnnotation lists, comma-separated, the nodes where the stand-in
// pods of a Service run.
const PodNodesAnnotation = "sandbox.stratus.dev/pod-nodes"

// PodNodes says where the stand-in pods of svc run: the nodes its
// annotation names, else the first half (rounded up) of the nodes that
// have an address, by name, so that externalTrafficPolicy Local has
// nodes to leave out as soon as there are two.
func PodNodes(svc *corev1.Service, nodes []*corev1.Node) map[string]bool {
	out := map[string]bool{}
	if v, ok := svc.Annotations[PodNodesAnnotation]; ok {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				out[n] = true
			}
		}
		return out
	}
	var names []string
	for _, n := range nodes {
		if internalIP(n) != "" {
			names = append(names, n.Name)
		}
	}
	slices.Sort(names)
	for _, n := range names[:(len(names)+1)/2] {
		out[n] = true
	}
	return out
}

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func (r *responder) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, stop := range r.listeners {
		stop()
		delete(r.listeners, k)
	}
}

func listen(e endpoint) (func(), error) {
	addr := net.JoinHostPort(e.ip, strconv.Itoa(int(e.port)))
	greeting := fmt.Sprintf("hello from %s via service %s (node port %d)\n", e.node, e.service, e.port)
	switch e.proto {
	case "TCP":
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, err
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go answerTCP(c, greeting)
			}
		}()
		return func() { _ = l.Close() }, nil
	case "UDP":
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, err
		}
		go func() {
			buf := make([]byte, 64*1024)
			for {
				n, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				_, _ = pc.WriteTo(buf[:n], from)
			}
		}()
		return func() { _ = pc.Close() }, nil
	default:
		return nil, fmt.Errorf("protocol %s not answered", e.proto)
	}
}

// answerTCP writes the greeting, as an HTTP response when the client spoke
// HTTP (so curl works), as a plain line otherwise.
func answerTCP(c net.Conn, greeting string) {
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	line, _ := bufio.NewReader(c).ReadString('\n')
	_ = c.SetReadDeadline(time.Time{})
	if isHTTP(line) {
		_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(greeting), greeting)
		return
	}
	_, _ = c.Write([]byte(greeting))
}

func isHTTP(line string) bool {
	for _, m := range []string{"GET ", "HEAD ", "POST ", "PUT ", "DELETE ", "OPTIONS "} {
		if strings.HasPrefix(line, m) {
			return true
		}
	}
	return false
}
