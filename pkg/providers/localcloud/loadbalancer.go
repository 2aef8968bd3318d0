package localcloud

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	servicehelpers "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// How soon the controller should look again at a load balancer the cloud
// is still provisioning or deleting: when the cloud says when it will be
// done (ReadyAt), just after that; a fixed retry equal to the provisioning
// time would often look a moment too early and then wait a whole period
// more. provisioningRetry is used when the cloud gives no time,
// lateRetry when the promised time has passed (the cloud is running late),
// and maxReadyWait bounds the wait against a clock far off the cloud's.
const (
	provisioningRetry = 2 * time.Second
	readyMargin       = 50 * time.Millisecond
	lateRetry         = 250 * time.Millisecond
	maxReadyWait      = time.Minute
)

// retryDelay is when to look again at lb, which is in transition.
func retryDelay(lb *api.LoadBalancer, now time.Time) time.Duration {
	if lb.ReadyAt.IsZero() {
		return provisioningRetry
	}
	return min(max(lb.ReadyAt.Sub(now)+readyMargin, lateRetry), maxReadyWait)
}

type loadBalancers struct {
	client         *lcclient.Client
	defaultCluster string
	// proxyHealthPort is kube-proxy's health port (Config.KubeProxyHealthPort).
	proxyHealthPort int
	// families are the IP families the load balancers serve
	// (Config.IPFamilies).
	families []corev1.IPFamily
	// endpointTargets: the cloud's load balancers reach pod addresses
	// (Config.EndpointTargets).
	endpointTargets bool
}

// GetLoadBalancerName derives the name from the Service UID, as upstream's
// DefaultLoadBalancerName does, so a retried create finds its own load
// balancer (the cloud answers 409 on a duplicate name) instead of making a
// second one.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *corev1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(svc)
}

// lookup finds the Service's load balancer by name within the cluster.
func (l *loadBalancers) lookup(ctx context.Context, cluster string, svc *corev1.Service) (*api.LoadBalancer, error) {
	name := cloudprovider.DefaultLoadBalancerName(svc)
	page, err := l.client.ListLoadBalancers(ctx, lcclient.ListOptions{Cluster: cluster, Name: name, MaxResults: 1})
	if err != nil {
		return nil, err
	}
	if len(page.Items) == 0 {
		return nil, nil
	}
	return &page.Items[0], nil
}

// GetLoadBalancer reports the status of an active load balancer; one that
// is being deleted no longer exists for the controller.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service) (_ *corev1.LoadBalancerStatus, _ bool, err error) {
	defer markThrottled(&err)
	lb, err := l.lookup(ctx, clusterOr(clusterName, l.defaultCluster), svc)
	if err != nil {
		return nil, false, svcErr(svc, err)
	}
	if lb == nil || lb.Status == api.LBDeleting {
		return nil, false, nil
	}
	if lb.Status != api.LBActive {
		return &corev1.LoadBalancerStatus{}, true, nil
	}
	mode, err := ipModeFrom(svc)
	if err != nil {
		mode = corev1.LoadBalancerIPModeVIP
	}
	return status(lb, mode), true, nil
}

// status has one ingress per VIP, in the order of the load balancer's
// families (the Service's spec.ipFamilies order, primary first).
func status(lb *api.LoadBalancer, mode corev1.LoadBalancerIPMode) *corev1.LoadBalancerStatus {
	st := &corev1.LoadBalancerStatus{}
	for _, f := range lb.Families() {
		ip := lb.VIP
		if f == api.IPv6 {
			ip = lb.VIP6
		}
		if ip != "" {
			st.Ingress = append(st.Ingress, corev1.LoadBalancerIngress{IP: ip, IPMode: ptr.To(mode)})
		}
	}
	return st
}

// desired turns a Service and its nodes into the cloud spec. Every check
// happens here, before any cloud call, so invalid input changes nothing.
func (l *loadBalancers) desired(svc *corev1.Service, nodes []*corev1.Node) (api.LoadBalancerSpec, corev1.LoadBalancerIPMode, error) {
	return l.desiredTargets(svc, nodes, nil)
}

// desiredTargets is desired with the targets of a load balancer: nodes
// when eps is nil, else the Service's endpoints (set on the listeners by
// withEndpoints), with every other setting derived from the Service alike.
func (l *loadBalancers) desiredTargets(svc *corev1.Service, nodes []*corev1.Node, eps cloud.EndpointSet) (api.LoadBalancerSpec, corev1.LoadBalancerIPMode, error) {
	var spec api.LoadBalancerSpec
	if len(svc.Spec.Ports) == 0 {
		return spec, "", errors.New("service has no ports")
	}
	for _, p := range svc.Spec.Ports {
		if p.Protocol != corev1.ProtocolTCP && p.Protocol != corev1.ProtocolUDP {
			return spec, "", fmt.Errorf("port %q (%d/%s): protocol %s is not supported, only TCP and UDP: %w", p.Name, p.Port, p.Protocol, p.Protocol, cloud.ErrPortNotSupported)
		}
		if eps != nil {
			// Endpoint targets need no node port: the endpoints get it.
			spec.Listeners = append(spec.Listeners, api.Listener{Protocol: api.Protocol(p.Protocol), Port: int(p.Port)})
			continue
		}
		if p.NodePort == 0 {
			return spec, "", fmt.Errorf("port %q (%d/%s): no node port allocated (allocateLoadBalancerNodePorts=false is not supported): %w", p.Name, p.Port, p.Protocol, cloud.ErrPortNotSupported)
		}
		spec.Listeners = append(spec.Listeners, api.Listener{Protocol: api.Protocol(p.Protocol), Port: int(p.Port), NodePort: int(p.NodePort)})
	}
	ranges, err := servicehelpers.GetLoadBalancerSourceRanges(svc)
	if err != nil {
		return spec, "", err
	}
	if !servicehelpers.IsAllowAll(ranges) {
		spec.SourceRanges = ranges.StringSlice()
		sort.Strings(spec.SourceRanges)
	}
	if spec.HealthCheck, err = healthCheckFrom(svc, l.proxyHealthPort); err != nil {
		return spec, "", err
	}
	if spec.UDPIdleTimeoutMs, err = durationMs(svc, AnnotationUDPIdleTimeout); err != nil {
		return spec, "", err
	}
	// A Service's ClientIP affinity holds only if the load balancer keeps
	// a client on one node: each node's kube-proxy keeps its own table.
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		spec.SessionAffinity = api.SessionAffinityClientIP
	}
	if spec.IPFamilies, err = l.familiesOf(svc); err != nil {
		return spec, "", err
	}
	if ip := svc.Spec.LoadBalancerIP; ip != "" {
		if _, err := requestedVIPs(ip, &spec); err != nil {
			return spec, "", err
		}
	}
	mode, err := ipModeFrom(svc)
	if err != nil {
		return spec, "", err
	}
	spec.Proxy = mode == corev1.LoadBalancerIPModeProxy
	if spec.ProxyProtocol, err = proxyProtocolFrom(svc); err != nil {
		return spec, "", err
	}
	if eps != nil {
		err := withEndpoints(&spec, svc, eps)
		return spec, mode, err
	}
	spec.Backends = backends(nodes)
	return spec, mode, nil
}

// EnsureLoadBalancer creates or updates the load balancer and returns its
// status once active. While the cloud provisions, it returns a RetryError
// so the controller requeues after a fixed delay instead of waiting here.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) (_ *corev1.LoadBalancerStatus, err error) {
	defer markThrottled(&err)
	cluster := clusterOr(clusterName, l.defaultCluster)
	spec, mode, err := l.desired(svc, nodes)
	if err != nil {
		return nil, svcErr(svc, err)
	}
	lb, err := l.createOrUpdate(ctx, cluster, svc, spec, nodes)
	if err != nil {
		return nil, svcErr(svc, err)
	}
	return ensured(lb, mode)
}

// ensured is the answer of an ensure that wrote (or found) lb: its status
// once active, else why not yet.
func ensured(lb *api.LoadBalancer, mode corev1.LoadBalancerIPMode) (*corev1.LoadBalancerStatus, error) {
	switch lb.Status {
	case api.LBActive:
		return status(lb, mode), nil
	case api.LBDeleting:
		return nil, cloudproviderapi.NewRetryError(fmt.Sprintf("localcloud: load balancer %s is still being deleted", lb.Name), retryDelay(lb, time.Now()))
	case api.LBError:
		// The cloud retries on its own; the controller's backoff and event
		// tell the user why the Service has no address yet.
		return nil, fmt.Errorf("localcloud: load balancer %s (%s) is in error: %s", lb.Name, lb.ID, lb.StatusMessage)
	default:
		return nil, cloudproviderapi.NewRetryError(fmt.Sprintf("localcloud: load balancer %s is provisioning", lb.Name), retryDelay(lb, time.Now()))
	}
}

func (l *loadBalancers) createOrUpdate(ctx context.Context, cluster string, svc *corev1.Service, spec api.LoadBalancerSpec, nodes []*corev1.Node) (*api.LoadBalancer, error) {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	lb, err := l.lookup(ctx, cluster, svc)
	if err != nil {
		return nil, err
	}
	if lb == nil {
		req := api.CreateLoadBalancerRequest{
			Name: cloudprovider.DefaultLoadBalancerName(svc), Cluster: cluster, LoadBalancerSpec: spec,
			Tags: map[string]string{
				api.TagServiceNamespace: svc.Namespace, api.TagServiceName: svc.Name, api.TagServiceUID: string(svc.UID),
			},
		}
		if ip := svc.Spec.LoadBalancerIP; ip != "" {
			// desired checked it.
			if a, _ := requestedVIPs(ip, &spec); a.Is4() {
				req.VIP = ip
			} else {
				req.VIP6 = ip
			}
		}
		created, err := l.withLiveBackends(ctx, &req.LoadBalancerSpec, nodes, func(sp api.LoadBalancerSpec) (*api.LoadBalancer, error) {
			req.LoadBalancerSpec = sp
			return l.client.CreateLoadBalancer(ctx, req)
		})
		if errors.Is(err, lcclient.ErrConflict) {
			// A concurrent or earlier attempt created it; use that one.
			return l.lookupExisting(ctx, cluster, svc)
		}
		if err != nil {
			return nil, requestedVIPErr(svc, withQuota(err))
		}
		logger.V(2).Info("Created load balancer", "loadBalancer", created.ID, "vip", created.VIP, "vip6", created.VIP6)
		return created, nil
	}
	if ip := svc.Spec.LoadBalancerIP; ip != "" && lb.Status != api.LBDeleting && ip != lb.VIP && ip != lb.VIP6 {
		have := strings.Join(slices.DeleteFunc([]string{lb.VIP, lb.VIP6}, func(v string) bool { return v == "" }), " and ")
		return nil, fmt.Errorf("spec.loadBalancerIP %q: the load balancer has VIP %s, and a VIP cannot change; recreate the Service to move it", ip, have)
	}
	if lb.Status == api.LBDeleting || specEqual(lb.LoadBalancerSpec, spec) {
		return lb, nil
	}
	logger.V(2).Info("Updating load balancer", "loadBalancer", lb.ID)
	return l.update(ctx, lb, spec, nodes)
}

// update writes spec unless, once backends of gone instances are dropped,
// it is what the load balancer already has.
func (l *loadBalancers) update(ctx context.Context, lb *api.LoadBalancer, spec api.LoadBalancerSpec, nodes []*corev1.Node) (*api.LoadBalancer, error) {
	return l.withLiveBackends(ctx, &spec, nodes, func(sp api.LoadBalancerSpec) (*api.LoadBalancer, error) {
		if specEqual(lb.LoadBalancerSpec, sp) {
			return lb, nil
		}
		return l.client.UpdateLoadBalancer(ctx, lb.ID, sp)
	})
}

func (l *loadBalancers) lookupExisting(ctx context.Context, cluster string, svc *corev1.Service) (*api.LoadBalancer, error) {
	lb, err := l.lookup(ctx, cluster, svc)
	if err == nil && lb == nil {
		err = errors.New("load balancer vanished after a name conflict")
	}
	return lb, err
}

// specEqual tells whether a sync has nothing to write, so that one with no
// change costs no update call: specChanges finds no difference.
func specEqual(a, b api.LoadBalancerSpec) bool {
	return len(specChanges(a, b)) == 0
}

// UpdateLoadBalancer brings the node set (and any other change) up to date.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) (err error) {
	defer markThrottled(&err)
	cluster := clusterOr(clusterName, l.defaultCluster)
	spec, _, err := l.desired(svc, nodes)
	if err != nil {
		return svcErr(svc, err)
	}
	lb, err := l.lookup(ctx, cluster, svc)
	if err != nil {
		return svcErr(svc, err)
	}
	if lb == nil || lb.Status == api.LBDeleting {
		return svcErr(svc, fmt.Errorf("localcloud: load balancer %s does not exist", cloudprovider.DefaultLoadBalancerName(svc)))
	}
	if specEqual(lb.LoadBalancerSpec, spec) {
		return nil
	}
	if _, err := l.update(ctx, lb, spec, nodes); err != nil {
		return svcErr(svc, err)
	}
	return nil
}

// EnsureLoadBalancerDeleted starts the deletion and returns; a load
// balancer that is gone or already being deleted is success.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *corev1.Service) (err error) {
	defer markThrottled(&err)
	cluster := clusterOr(clusterName, l.defaultCluster)
	lb, err := l.lookup(ctx, cluster, svc)
	if err != nil {
		return svcErr(svc, err)
	}
	if lb == nil || lb.Status == api.LBDeleting {
		return nil
	}
	if _, err := l.client.DeleteLoadBalancer(ctx, lb.ID); err != nil && !errors.Is(err, lcclient.ErrNotFound) {
		return svcErr(svc, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleting load balancer", "service", klog.KObj(svc), "loadBalancer", lb.ID)
	return nil
}

// requestedVIPErr names spec.loadBalancerIP when the cloud refused the VIP
// the Service asked for (outside the pool, or taken).
func requestedVIPErr(svc *corev1.Service, err error) error {
	var ae *lcclient.APIError
	if errors.As(err, &ae) && ae.Field == "vip" {
		return fmt.Errorf("spec.loadBalancerIP %q: %w", svc.Spec.LoadBalancerIP, err)
	}
	return err
}

// svcErr names the Service an error concerns: the instrumented wrapper names
// the operation and the client the cloud request, so this layer adds only
// which Service it was for.
func svcErr(svc *corev1.Service, err error) error {
	return fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, err)
}
