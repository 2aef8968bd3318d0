package service_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	cloudprovider "k8s.io/cloud-provider"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/internal/controllers/service/servicetest"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const pollTimeout = 90 * time.Second

// bed is one control plane, kwok, one localcloud and the controller.
type bed struct {
	t     *testing.T // the running (sub)test
	root  *testing.T
	ctx   context.Context
	env   *testbed.Env
	cs    kubernetes.Interface
	cloud *servicetest.Cloud
	cfg   service.Config
	ctrl  *servicetest.Controller
	insts map[string]api.Instance
}

func newBed(t *testing.T) *bed {
	env := testbed.Start(t)
	env.StartKwok(t)
	knobs := api.DefaultKnobs()
	knobs.LBProvisioningTime = api.Duration(300 * time.Millisecond)
	knobs.LBDeletionTime = api.Duration(200 * time.Millisecond)
	b := &bed{
		t: t, root: t, ctx: testbed.Context(t, 8*time.Minute), env: env, cs: env.Clientset,
		cloud: servicetest.StartCloud(t, knobs, servicetest.CloudOptions{}),
		cfg: service.Config{
			NodeSyncDelay: 200 * time.Millisecond, MinRetryDelay: 200 * time.Millisecond, MaxRetryDelay: 2 * time.Second,
			DeleteOrphans: true, OrphanGrace: time.Second, OrphanInterval: 500 * time.Millisecond,
		},
		insts: map[string]api.Instance{},
	}
	return b
}

// run runs a step of the scenario as a subtest; steps run in order.
func (b *bed) run(name string, f func(t *testing.T)) {
	b.t.Helper()
	b.t.Run(name, func(t *testing.T) {
		prev := b.t
		b.t = t
		defer func() { b.t = prev }()
		f(t)
	})
}

func (b *bed) start() { b.ctrl = servicetest.StartController(b.t, b.env.Config, b.cloud, b.cfg) }

func (b *bed) addNode(name string, labels map[string]string) api.Instance {
	b.t.Helper()
	_, inst, err := servicetest.AddNode(b.ctx, b.cs, b.cloud.Client, name, labels, true)
	if err != nil {
		b.t.Fatal(err)
	}
	b.insts[name] = inst
	return inst
}

func (b *bed) createService(svc *corev1.Service) *corev1.Service {
	b.t.Helper()
	out, err := b.cs.CoreV1().Services(svc.Namespace).Create(b.ctx, svc, metav1.CreateOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	return out
}

// poll waits for cond; last, when given, describes the last attempt.
func (b *bed) poll(what string, cond func(context.Context) (bool, error), last ...*string) {
	b.t.Helper()
	if err := wait.PollUntilContextTimeout(b.ctx, 100*time.Millisecond, pollTimeout, true, cond); err != nil {
		if len(last) > 0 {
			b.t.Fatalf("waiting for %s: %v; last: %s", what, err, *last[0])
		}
		b.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitIngress waits for the Service's ingress and returns its IP.
func (b *bed) waitIngress(ns, name string) string {
	b.t.Helper()
	var ip string
	b.poll("ingress of "+ns+"/"+name, func(ctx context.Context) (bool, error) {
		svc, err := b.cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
			return false, nil
		}
		ip = svc.Status.LoadBalancer.Ingress[0].IP
		return ip != "", nil
	})
	return ip
}

// lbOf returns the localcloud load balancers made for svc.
func (b *bed) lbsOf(svc *corev1.Service) []api.LoadBalancer {
	b.t.Helper()
	lbs, err := b.cloud.Client.ListAllLoadBalancers(b.ctx, lcclient.ListOptions{Cluster: servicetest.ClusterName, Name: cloudprovider.DefaultLoadBalancerName(svc)})
	if err != nil {
		b.t.Fatal(err)
	}
	return lbs
}

// waitBackends waits until svc's load balancer targets exactly the nodes.
func (b *bed) waitBackends(svc *corev1.Service, nodes ...string) {
	b.t.Helper()
	var want []string
	for _, n := range nodes {
		want = append(want, b.insts[n].ID)
	}
	slices.Sort(want)
	var got []string
	b.poll(fmt.Sprintf("backends %v", nodes), func(context.Context) (bool, error) {
		lbs := b.lbsOf(svc)
		if len(lbs) != 1 {
			return false, nil
		}
		got = slices.Sorted(slices.Values(lbs[0].Backends))
		return slices.Equal(got, want), nil
	})
}

// updateService changes a Service as a user's client does: read, change,
// write, again on a conflict (the controller writes its status and
// conditions meanwhile).
func (b *bed) updateService(ns, name string, change func(*corev1.Service)) {
	b.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := b.cs.CoreV1().Services(ns).Get(b.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(cur)
		_, err = b.cs.CoreV1().Services(ns).Update(b.ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		b.t.Fatal(err)
	}
}

func webService(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{
			"localcloud.stratus.io/health-check-interval": "200ms",
		}},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(5353)},
			},
		},
	}
}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(klog.Background())
	os.Exit(m.Run())
}

func TestEndToEnd(t *testing.T) {
	b := newBed(t)
	b.addNode("node-a", nil)
	b.addNode("node-b", nil)
	b.addNode("node-x", map[string]string{corev1.LabelNodeExcludeBalancers: "true"})
	b.start()

	b.createService(webService("default", "web"))
	vip := b.waitIngress("default", "web")
	svc, _ := b.cs.CoreV1().Services("default").Get(b.ctx, "web", metav1.GetOptions{})

	b.run("created with finalizer, ingress and the eligible nodes", func(t *testing.T) {
		if !servicehelper.HasLBFinalizer(svc) {
			t.Error("no finalizer")
		}
		// The finalizer and the status are written through the status
		// subresource, under the controller's field manager.
		if !testbed.WrittenBy(svc, service.ControllerName, "status") {
			t.Errorf("field managers %v, want %s/status", testbed.Managers(svc), service.ControllerName)
		}
		ing := svc.Status.LoadBalancer.Ingress[0]
		if ing.IPMode == nil || *ing.IPMode != corev1.LoadBalancerIPModeVIP {
			t.Errorf("ipMode = %v", ing.IPMode)
		}
		b.waitBackends(svc, "node-a", "node-b") // node-x is excluded
		if lbs := b.lbsOf(svc); lbs[0].VIP != vip {
			t.Errorf("cloud VIP %s, ingress %s", lbs[0].VIP, vip)
		}
	})

	b.run("TCP and UDP traffic reach a node's node port", func(*testing.T) {
		for _, n := range []string{"node-a", "node-b"} {
			serveTCP(b.root, b.insts[n].Addresses.Internal, svc.Spec.Ports[0].NodePort, n)
			serveUDP(b.root, b.insts[n].Addresses.Internal, svc.Spec.Ports[1].NodePort, n)
		}
		b.poll("TCP through the VIP", func(ctx context.Context) (bool, error) {
			r, err := askTCP(ctx, vip, 80)
			return err == nil && strings.HasPrefix(r, "node-"), nil
		})
		b.poll("UDP through the VIP", func(ctx context.Context) (bool, error) {
			r, err := askUDP(ctx, vip, 53)
			return err == nil && strings.HasPrefix(r, "node-"), nil
		})
	})

	b.run("events", func(*testing.T) {
		b.poll("EnsuredLoadBalancer event", func(ctx context.Context) (bool, error) {
			return hasEvent(ctx, b.cs, svc, service.ReasonEnsuredLoadBalancer), nil
		})
	})

	b.run("port update", func(t *testing.T) {
		b.updateService("default", "web", func(cur *corev1.Service) { cur.Spec.Ports[0].Port = 8081 })
		var last string
		b.poll("traffic on the new port", func(ctx context.Context) (bool, error) {
			r, err := askTCP(ctx, vip, 8081)
			last = fmt.Sprintf("%q %v %+v", r, err, b.lbsOf(svc))
			return err == nil && strings.HasPrefix(r, "node-"), nil
		}, &last)
		if lbs := b.lbsOf(svc); len(lbs) != 1 || lbs[0].Listeners[0].Port != 8081 {
			t.Errorf("listeners = %+v", lbs)
		}
	})

	b.run("node joins, leaves, gets excluded", func(t *testing.T) {
		b.addNode("node-c", nil)
		b.waitBackends(svc, "node-a", "node-b", "node-c")
		if err := b.cs.CoreV1().Nodes().Delete(b.ctx, "node-b", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		b.waitBackends(svc, "node-a", "node-c")
		n, err := b.cs.CoreV1().Nodes().Get(b.ctx, "node-c", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels[corev1.LabelNodeExcludeBalancers] = "true"
		if _, err := b.cs.CoreV1().Nodes().Update(b.ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		b.waitBackends(svc, "node-a")
		b.poll("traffic after the node changes", func(ctx context.Context) (bool, error) {
			r, err := askTCP(ctx, vip, 8081)
			return err == nil && r == "node-a", nil
		})
	})

	b.run("bad input warns and creates nothing", func(t *testing.T) {
		bad := webService("default", "sctp")
		bad.Spec.Ports = []corev1.ServicePort{{Name: "sctp", Protocol: corev1.ProtocolSCTP, Port: 5000}}
		bad = b.createService(bad)
		b.poll("a warning naming SCTP", func(ctx context.Context) (bool, error) {
			return hasEventNote(ctx, b.cs, bad, service.ReasonSyncLoadBalancerFailed, "SCTP"), nil
		})
		if lbs := b.lbsOf(bad); len(lbs) != 0 {
			t.Errorf("a load balancer was made for invalid input: %+v", lbs)
		}
		// Others are unaffected.
		if r, err := askTCP(b.ctx, vip, 8081); err != nil || r != "node-a" {
			t.Errorf("web answered %q, %v", r, err)
		}
		if err := b.cs.CoreV1().Services("default").Delete(b.ctx, "sctp", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		b.waitGone("default", "sctp")
	})

	b.run("quota exceeded warns, then recovers", func(t *testing.T) {
		lbs, err := b.cloud.Client.ListAllLoadBalancers(b.ctx, lcclient.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.cloud.Client.UpdateConfig(b.ctx, api.KnobsPatch{Quotas: &api.QuotasPatch{LoadBalancers: ptrTo(len(lbs))}}); err != nil {
			t.Fatal(err)
		}
		q := b.createService(webService("default", "quota"))
		b.poll("a warning naming the quota", func(ctx context.Context) (bool, error) {
			return hasEventNote(ctx, b.cs, q, service.ReasonSyncLoadBalancerFailed, "loadBalancers"), nil
		})
		if n := len(b.lbsOf(q)); n != 0 {
			t.Errorf("%d load balancers beyond the quota", n)
		}
		if _, err := b.cloud.Client.UpdateConfig(b.ctx, api.KnobsPatch{Quotas: &api.QuotasPatch{LoadBalancers: ptrTo(1000)}}); err != nil {
			t.Fatal(err)
		}
		b.waitIngress("default", "quota") // retried with backoff
	})

	b.run("type change away from LoadBalancer", func(_ *testing.T) {
		tc := b.createService(webService("default", "typechange"))
		b.waitIngress("default", "typechange")
		b.updateService("default", "typechange", func(cur *corev1.Service) {
			cur.Spec.Type = corev1.ServiceTypeClusterIP
			for i := range cur.Spec.Ports {
				cur.Spec.Ports[i].NodePort = 0
			}
		})
		b.poll("status and finalizer cleared", func(ctx context.Context) (bool, error) {
			s, err := b.cs.CoreV1().Services("default").Get(ctx, "typechange", metav1.GetOptions{})
			return err == nil && len(s.Status.LoadBalancer.Ingress) == 0 && !servicehelper.HasLBFinalizer(s), nil
		})
		b.waitNoLB(tc)
	})

	b.run("delete", func(t *testing.T) {
		if err := b.cs.CoreV1().Services("default").Delete(b.ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		b.waitGone("default", "web")
		b.waitNoLB(svc)
	})

	b.run("orphan deleted, live load balancer kept", func(t *testing.T) {
		live := b.createService(webService("default", "live"))
		b.waitIngress("default", "live")
		ghost := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ghost", UID: "0b4c6a57-0000-4000-8000-000000000001"}}
		_, err := b.cloud.Client.CreateLoadBalancer(b.ctx, api.CreateLoadBalancerRequest{
			Name: cloudprovider.DefaultLoadBalancerName(ghost), Cluster: servicetest.ClusterName,
			Tags:             map[string]string{api.TagServiceNamespace: "default", api.TagServiceName: "ghost", api.TagServiceUID: string(ghost.UID)},
			LoadBalancerSpec: api.LoadBalancerSpec{Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: 9999, NodePort: 31999}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		b.waitNoLB(ghost)
		if n := len(b.lbsOf(live)); n != 1 {
			t.Errorf("live Service has %d load balancers", n)
		}
	})

	b.run("drift in the cloud repaired", func(t *testing.T) {
		live, err := b.cs.CoreV1().Services("default").Get(b.ctx, "live", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lbs := b.lbsOf(live)
		if len(lbs) != 1 || len(lbs[0].Backends) == 0 {
			t.Fatalf("live load balancers: %+v", lbs)
		}
		orig := lbs[0]
		want := slices.Sorted(slices.Values(orig.Backends))
		// Backends removed behind the controller's back come back.
		changed := orig.LoadBalancerSpec
		changed.Backends = nil
		if _, err := b.cloud.Client.UpdateLoadBalancer(b.ctx, orig.ID, changed); err != nil {
			t.Fatal(err)
		}
		b.poll("backends restored", func(context.Context) (bool, error) {
			lbs := b.lbsOf(live)
			return len(lbs) == 1 && slices.Equal(slices.Sorted(slices.Values(lbs[0].Backends)), want), nil
		})
		// A load balancer deleted behind the controller's back is recreated
		// and the Service publishes the new one's address.
		if _, err := b.cloud.Client.DeleteLoadBalancer(b.ctx, orig.ID); err != nil {
			t.Fatal(err)
		}
		var last string
		b.poll("load balancer recreated and published", func(ctx context.Context) (bool, error) {
			lbs := b.lbsOf(live)
			if len(lbs) != 1 || lbs[0].ID == orig.ID || lbs[0].Status != api.LBActive {
				last = fmt.Sprintf("%+v", lbs)
				return false, nil
			}
			s, err := b.cs.CoreV1().Services("default").Get(ctx, "live", metav1.GetOptions{})
			if err != nil || len(s.Status.LoadBalancer.Ingress) != 1 {
				return false, nil
			}
			last = fmt.Sprintf("ingress %s, load balancer %s VIP %s", s.Status.LoadBalancer.Ingress[0].IP, lbs[0].ID, lbs[0].VIP)
			return s.Status.LoadBalancer.Ingress[0].IP == lbs[0].VIP, nil
		}, &last)
	})
}

// A controller stopped while a load balancer provisions, and a new one
// started, make one load balancer, not two.
func TestRestartMidProvisioning(t *testing.T) {
	b := newBed(t)
	if _, err := b.cloud.Client.UpdateConfig(b.ctx, api.KnobsPatch{LBProvisioningTime: ptrTo(api.Duration(3 * time.Second))}); err != nil {
		t.Fatal(err)
	}
	b.addNode("node-a", nil)
	b.start()
	svc := b.createService(webService("default", "web"))
	b.poll("load balancer provisioning", func(context.Context) (bool, error) {
		lbs := b.lbsOf(svc)
		return len(lbs) == 1 && lbs[0].Status == api.LBProvisioning, nil
	})
	b.ctrl.Stop()
	b.start()
	b.waitIngress("default", "web")
	if lbs := b.lbsOf(svc); len(lbs) != 1 {
		t.Fatalf("%d load balancers after the restart", len(lbs))
	}
	stats, err := b.cloud.Client.Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := stats.Operations["CreateLoadBalancer"].ByCode["201"] + stats.Operations["CreateLoadBalancer"].ByCode["200"]; n != 1 {
		t.Errorf("CreateLoadBalancer succeeded %d times: %+v", n, stats.Operations["CreateLoadBalancer"])
	}
}

func (b *bed) waitGone(ns, name string) {
	b.t.Helper()
	b.poll("Service "+ns+"/"+name+" gone", func(ctx context.Context) (bool, error) {
		_, err := b.cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

func (b *bed) waitNoLB(svc *corev1.Service) {
	b.t.Helper()
	b.poll("load balancer of "+svc.Name+" gone", func(context.Context) (bool, error) {
		for _, lb := range b.lbsOf(svc) {
			if lb.Status != api.LBDeleting {
				return false, nil
			}
		}
		return true, nil
	})
}

func hasEvent(ctx context.Context, cs kubernetes.Interface, svc *corev1.Service, reason string) bool {
	return hasEventNote(ctx, cs, svc, reason, "")
}

func hasEventNote(ctx context.Context, cs kubernetes.Interface, svc *corev1.Service, reason, note string) bool {
	evs, err := cs.EventsV1().Events(svc.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, e := range evs.Items {
		if e.Regarding.UID == svc.UID && e.Reason == reason && strings.Contains(e.Note, note) {
			return true
		}
	}
	return false
}

func ptrTo[T any](v T) *T { return &v }

// serveTCP answers every connection with reply, on ip:port, until t ends.
func serveTCP(t *testing.T, ip string, port int32, reply string) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(int(port))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(reply))
			_ = c.Close()
		}
	}()
}

// serveUDP answers every datagram with reply.
func serveUDP(t *testing.T, ip string, port int32, reply string) {
	t.Helper()
	pc, err := net.ListenPacket("udp", net.JoinHostPort(ip, strconv.Itoa(int(port))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo([]byte(reply), from)
		}
	}()
}

func askTCP(ctx context.Context, ip string, port int) (string, error) {
	c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}

func askUDP(ctx context.Context, ip string, port int) (string, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "udp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("ping")); err != nil {
		return "", err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}
