package sandbox

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/localcluster/realnode"
)

const (
	// maxRealNodes bounds --real-nodes: each node is about 200 MiB.
	maxRealNodes = 20
	// RealNodeLabel is on the Nodes of real nodes (their kubelets register
	// it), so that workloads that need real pods go there.
	RealNodeLabel = "sandbox.stratus.dev/real-node"
	// realTag marks the instances of real nodes.
	realTag = "sandbox-real-node"
	// DemoRealService is the demo Service served by real pods on the real
	// nodes, through kube-proxy.
	DemoRealService = "hello-real"
	demoImage       = "stratus.local/demo:v1"
)

func realNodeName(i int) string { return fmt.Sprintf("real-%02d", i) }

// realNodeAPIServerArgs: kubelets authenticate as their Node and may only
// touch it (Node authorizer, NodeRestriction); the API server reaches
// them on their InternalIP, the address of their namespace.
func (s *sandbox) realNodeAPIServerArgs() []string {
	if s.o.RealNodes == 0 {
		return nil
	}
	return []string{"--authorization-mode=Node", "--enable-admission-plugins=NodeRestriction",
		"--kubelet-preferred-address-types=InternalIP"}
}

// startRealNodes runs kube-controller-manager and kube-scheduler under
// supervision, then the real nodes, each with an instance whose internal
// address is the node's, and keeps the nodes' routes following the
// cloud's route table.
func (s *sandbox) startRealNodes(ctx context.Context) error {
	for _, c := range []struct {
		name, user string
		args       func(kubeconfig string, port int) []string
	}{
		{"kube-controller-manager", localcluster.ControllerManagerUser, s.plane.ControllerManagerArgs},
		{"kube-scheduler", localcluster.SchedulerUser, localcluster.SchedulerArgs},
	} {
		cfg, err := s.plane.UserConfig(c.user)
		if err != nil {
			return fmt.Errorf("sandbox: %s: %w", c.name, err)
		}
		kc := filepath.Join(s.state, "run", c.name+".kubeconfig")
		if err := localcluster.WriteKubeconfig(cfg, kc); err != nil {
			return err
		}
		port, err := freePort()
		if err != nil {
			return err
		}
		args := c.args(kc, port)
		if c.name == "kube-controller-manager" {
			args = append(args, "--node-monitor-grace-period="+s.o.NodeMonitorGracePeriod.String())
		}
		binary := filepath.Join(s.o.BinDir, c.name)
		if _, err := s.superviseAPIClient(ctx, c.name, func() (*child, error) {
			return startChild(c.name, s.logs, binary, args...)
		}); err != nil {
			return err
		}
	}
	for i := 1; i <= s.o.RealNodes; i++ {
		n, err := s.real.AddNode(ctx, realNodeName(i))
		if err != nil {
			return fmt.Errorf("sandbox: real nodes: %w", err)
		}
		replaced, err := s.ensureRealInstance(ctx, n, i)
		if err != nil {
			return err
		}
		if replaced {
			if err := s.reregisterRealNode(ctx, n); err != nil {
				return err
			}
		}
	}
	go s.followRoutes(ctx)
	return nil
}

// takeRealSlot takes the real nodes' slot of the machine before localcloud
// starts: unless --vip-pool says otherwise, the slot's VIP pool becomes
// localcloud's, so that the load balancers answer pods on the real nodes
// as well as the machine (a VIP on loopback is each namespace's own).
func (s *sandbox) takeRealSlot(ctx context.Context) error {
	var images []string
	if len(s.o.RealNodeImages) > 0 {
		var err error
		if images, err = filepath.Glob(filepath.Join(s.o.BinDir, "images", "*.tar")); err != nil {
			return fmt.Errorf("sandbox: real nodes: %w", err)
		}
		images = append(images, s.o.RealNodeImages...)
	}
	// With real nodes only and the slot's VIP pool, load balancers pass
	// packets through in the slot's load-balancer namespace and keep the
	// client's address. kwok nodes' addresses are the machine's loopback,
	// which that namespace cannot reach: beside them, load balancers stay
	// localcloud's proxies on the machine.
	cluster, err := realnode.Start(ctx, realnode.Config{BinDir: s.o.BinDir, APIServerPort: s.o.APIServerPort,
		Credentials: s.plane.UserConfig, NodeLabels: map[string]string{RealNodeLabel: "true"},
		NodeLeaseSeconds: s.leaseSeconds(), Images: images, ClusterDNS: ClusterDNSAddr(), ClusterDomain: ClusterDomain,
		LoadBalancerNetwork: s.o.Nodes == 0 && s.o.VIPPool == "", DualStack: s.dual, ServiceCIDRs: s.serviceCIDRPrefixes()})
	if err != nil {
		return fmt.Errorf("sandbox: real nodes: %w", err)
	}
	s.real = cluster
	if s.o.VIPPool == "" {
		s.o.VIPPool = cluster.VIPPool().String()
	}
	return nil
}

// ensureRealInstance creates the node's instance with the node's address,
// replacing one left from an earlier run whose node had another address
// (the run took another slot of the machine: an earlier one was busy). It
// says whether it replaced one.
func (s *sandbox) ensureRealInstance(ctx context.Context, n *realnode.Node, i int) (replaced bool, err error) {
	existing, err := s.cloud.ListAllInstances(ctx, lcclient.ListOptions{Tags: map[string]string{api.TagCluster: clusterName}})
	if err != nil {
		return false, fmt.Errorf("sandbox: list instances: %w", err)
	}
	for _, in := range existing {
		if in.Name != n.Name || in.State == api.InstanceTerminated {
			continue
		}
		if in.Addresses.Internal == n.IP.String() && in.Addresses.Internal6 == addrString(n.IP6) {
			return false, nil
		}
		if _, err := s.cloud.DeleteInstance(ctx, in.ID); err != nil {
			return false, fmt.Errorf("sandbox: replace instance %s: %w", n.Name, err)
		}
		replaced = true
	}
	_, err = s.cloud.CreateInstance(ctx, api.CreateInstanceRequest{Name: n.Name, Zone: zoneName(i-1, s.o.Zones),
		Region: region, Type: "standard-2", InternalAddress: n.IP.String(), InternalAddress6: addrString(n.IP6),
		Tags: map[string]string{api.TagCluster: clusterName, realTag: "true"}})
	if err != nil {
		return replaced, fmt.Errorf("sandbox: create instance %s: %w", n.Name, err)
	}
	return replaced, nil
}

// reregisterRealNode makes a real node whose instance was replaced join as
// a new machine would. Its Node of the last run names the old instance:
// the kubelet, just started, found it and registers no other, and the
// controller manager would delete it (the instance is gone) the first time
// the kubelet reports NotReady, leaving the node without a Node for the
// rest of the run. So the Node goes before the controller manager starts,
// and the kubelet restarts and registers a new one, tainted uninitialized,
// which the controller manager initializes with the new instance. Pods
// bound to the name stay bound to it.
func (s *sandbox) reregisterRealNode(ctx context.Context, n *realnode.Node) error {
	n.StopKubelet(ctx)
	err := s.kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("sandbox: real node %s has a new instance; delete its Node of the last run: %w", n.Name, err)
	}
	klog.FromContext(ctx).Info("Real node has a new address and instance; it registers a new Node", "node", n.Name, "ip", n.IP)
	return n.StartKubelet(ctx)
}

// followRealNode makes a real node's kubelet follow its machine.
func (s *sandbox) followRealNode(ctx context.Context, n *realnode.Node, running bool) error {
	if running {
		return n.StartKubelet(ctx)
	}
	n.StopKubelet(ctx)
	return nil
}

// realNode returns the real node of that name, or nil.
func (s *sandbox) realNode(name string) *realnode.Node {
	if s.real == nil {
		return nil
	}
	return s.real.Node(name)
}

// followRoutes applies the cloud's route table to the real nodes every
// two seconds: the routes to real nodes' pod CIDRs, by the internal
// address of each route's instance.
func (s *sandbox) followRoutes(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("routes")
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		if err := s.syncRoutes(ctx); err != nil && ctx.Err() == nil {
			logger.V(2).Info("Routes not applied; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *sandbox) syncRoutes(ctx context.Context) error {
	routes, err := s.cloud.ListRoutes(ctx, clusterName)
	if err != nil {
		return fmt.Errorf("list routes: %w", err)
	}
	instances, err := s.cloud.ListAllInstances(ctx, lcclient.ListOptions{Tags: map[string]string{api.TagCluster: clusterName}})
	if err != nil {
		return fmt.Errorf("list instances: %w", err)
	}
	addr, addr6 := map[string]string{}, map[string]string{}
	for _, in := range instances {
		addr[in.ID], addr6[in.ID] = in.Addresses.Internal, in.Addresses.Internal6
	}
	var out []realnode.Route
	for _, r := range routes {
		dst, err1 := netip.ParsePrefix(r.DestinationCIDR)
		// An IPv6 pod CIDR goes to the node's IPv6 address.
		subnet, hop := s.real.Subnet(), addr[r.InstanceID]
		if err1 == nil && dst.Addr().Is6() {
			subnet, hop = s.real.Subnet6(), addr6[r.InstanceID]
		}
		via, err2 := netip.ParseAddr(hop)
		if r.State != api.RouteActive || err1 != nil || err2 != nil || !subnet.Contains(via) {
			continue
		}
		out = append(out, realnode.Route{Destination: dst, NextHop: via})
	}
	return s.real.SetRoutes(ctx, out)
}

// demoReal runs the demo image on the real nodes (a Deployment kept there
// by their label) behind a LoadBalancer Service.
func (s *sandbox) demoReal(ctx context.Context) error {
	if err := s.ensureDemoDeployment(ctx); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: DemoRealService, Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: demoRealLabels(),
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if s.dual {
		// A load balancer of each family: an IPv4 and an IPv6 ingress.
		svc.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	}
	if _, err := s.kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("sandbox: create demo Service %s: %w", svc.Name, err)
	}
	if s.o.NoCCM {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.ReadyTimeout)
	defer cancel()
	vips, err := s.waitAnswer(ctx, DemoRealService)
	if len(s.demoVIPs) == 0 {
		s.demoVIPs = vips
	}
	if err != nil || !s.endpointTargets() {
		return err
	}
	return s.demoDirect(ctx)
}

// demoRealLabels select the demo Deployment's pods on the real nodes.
func demoRealLabels() map[string]string { return map[string]string{"app": DemoRealService} }

// ensureDemoDeployment runs the demo image on the real nodes, one pod per
// node.
func (s *sandbox) ensureDemoDeployment(ctx context.Context) error {
	labels := demoRealLabels()
	env := func(k, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	replicas := int32(s.o.RealNodes)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: DemoRealService, Namespace: metav1.NamespaceDefault},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{RealNodeLabel: "true"},
					Containers: []corev1.Container{{Name: "demo", Image: demoImage, ImagePullPolicy: corev1.PullNever,
						Env:   []corev1.EnvVar{env("POD_NAME", "metadata.name"), env("NODE_NAME", "spec.nodeName")},
						Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
				},
			},
		},
	}
	if _, err := s.kube.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("sandbox: create Deployment %s: %w", d.Name, err)
	}
	return nil
}

// freePort is a free port on 127.0.0.1 for a child's serving port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("sandbox: free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// addrString is a's text, empty for the zero Addr.
func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
