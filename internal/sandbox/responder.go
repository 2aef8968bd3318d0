package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// responder stands in for kube-proxy and the pods behind a Service: on
// each node's internal address it listens on the node ports of every
// LoadBalancer Service and answers, TCP with a line (or a minimal HTTP
// response) naming the node and the Service, UDP as an echo. That is all
// the sandbox needs to show traffic arriving through a load balancer; no
// packets are proxied anywhere else.
type responder struct {
	mu        sync.Mutex
	listeners map[string]func() // key: proto/ip:port/service
}

func (s *sandbox) startResponder(ctx context.Context) error {
	r := &responder{listeners: map[string]func(){}}
	// One pass now so errors surface at startup, then keep in sync.
	if err := r.sync(ctx, s); err != nil {
		return err
	}
	go func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		defer r.closeAll()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := r.sync(ctx, s); err != nil && ctx.Err() == nil {
					klog.FromContext(ctx).V(2).Info("node-port responder sync failed", "err", err)
				}
			}
		}
	}()
	return nil
}

type endpoint struct {
	proto, ip, node, service string
	port                     int32
}

func (e endpoint) key() string {
	return e.proto + "/" + net.JoinHostPort(e.ip, strconv.Itoa(int(e.port))) + "/" + e.service
}

func (r *responder) sync(ctx context.Context, s *sandbox) error {
	instances, err := s.cloud.ListAllInstances(ctx, lcclient.ListOptions{})
	if err != nil {
		return fmt.Errorf("responder: list instances: %w", err)
	}
	svcs, err := s.kube.CoreV1().Services("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return fmt.Errorf("responder: list services: %w", err)
	}
	want := map[string]endpoint{}
	for _, in := range instances {
		if in.State != api.InstanceRunning || in.Addresses.Internal == "" {
			continue
		}
		for i := range svcs.Items {
			svc := &svcs.Items[i]
			if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
				continue
			}
			for _, p := range svc.Spec.Ports {
				if p.NodePort == 0 {
					continue
				}
				e := endpoint{proto: string(p.Protocol), ip: in.Addresses.Internal, node: in.Name,
					service: svc.Namespace + "/" + svc.Name, port: p.NodePort}
				want[e.key()] = e
			}
			if hc := svc.Spec.HealthCheckNodePort; hc != 0 {
				e := endpoint{proto: "TCP", ip: in.Addresses.Internal, node: in.Name, service: svc.Namespace + "/" + svc.Name, port: hc}
				want[e.key()] = e
			}
		}
	}
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
	return nil
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
