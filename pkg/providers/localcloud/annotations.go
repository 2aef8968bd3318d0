package localcloud

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// Service annotations this provider reads. Invalid values are errors that
// name the annotation and value, and nothing is changed in the cloud.
const (
	AnnotationPrefix = "localcloud.stratus.io/"
	// AnnotationHealthCheckInterval is a Go duration between probes, e.g. "5s".
	AnnotationHealthCheckInterval = AnnotationPrefix + "health-check-interval"
	// AnnotationHealthCheckTimeout is a Go duration a probe may take.
	AnnotationHealthCheckTimeout = AnnotationPrefix + "health-check-timeout"
	// AnnotationHealthyThreshold is the consecutive successes (1-100) that
	// make a backend healthy again.
	AnnotationHealthyThreshold = AnnotationPrefix + "health-check-healthy-threshold"
	// AnnotationUnhealthyThreshold is the consecutive failures (1-100) that
	// take a backend out.
	AnnotationUnhealthyThreshold = AnnotationPrefix + "health-check-unhealthy-threshold"
	// AnnotationUDPIdleTimeout is a Go duration after which a silent UDP
	// flow ends.
	AnnotationUDPIdleTimeout = AnnotationPrefix + "udp-idle-timeout"
	// AnnotationIPMode is "VIP" (default) or "Proxy", reported in
	// status.loadBalancer.ingress[].ipMode. Proxy makes the load balancer a
	// proxy (connections from its own address) where the cloud could pass
	// packets through, and kube-proxy sends in-cluster traffic for the VIP
	// through it too (KEP-1860).
	AnnotationIPMode = AnnotationPrefix + "ip-mode"
	// AnnotationProxyProtocol is "v1" or "v2": the load balancer proxies
	// TCP connections and starts each with a PROXY protocol header of that
	// version carrying the client's address. It implies ip-mode Proxy: a
	// client inside the cluster must reach the pods through the load
	// balancer too, or they would get a connection without the header.
	AnnotationProxyProtocol = AnnotationPrefix + "proxy-protocol"
)

// knownAnnotations are every annotation under AnnotationPrefix this
// provider reads.
var knownAnnotations = []string{
	AnnotationHealthCheckInterval, AnnotationHealthCheckTimeout, AnnotationHealthyThreshold,
	AnnotationUnhealthyThreshold, AnnotationUDPIdleTimeout, AnnotationIPMode, AnnotationProxyProtocol,
}

// UnknownAnnotations names the Service's annotations under
// AnnotationPrefix that this provider does not read (a misspelling would
// otherwise be ignored in silence), sorted, and the known ones to suggest.
func (l *loadBalancers) UnknownAnnotations(svc *corev1.Service) (unknown, known []string) {
	for k := range svc.Annotations {
		if strings.HasPrefix(k, AnnotationPrefix) && !slices.Contains(knownAnnotations, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil, nil
	}
	sort.Strings(unknown)
	return unknown, slices.Clone(knownAnnotations)
}

// annotationError names the annotation and the offending value.
func annotationError(key, val, want string) error {
	return fmt.Errorf("annotation %s: invalid value %q: %s", key, val, want)
}

func durationMs(svc *corev1.Service, key string) (int, error) {
	val, ok := svc.Annotations[key]
	if !ok {
		return 0, nil
	}
	d, err := time.ParseDuration(val)
	if err != nil || d <= 0 || d > time.Hour {
		return 0, annotationError(key, val, "want a duration between 1ms and 1h, e.g. \"5s\"")
	}
	return max(1, int(d.Milliseconds())), nil
}

func threshold(svc *corev1.Service, key string) (int, error) {
	val, ok := svc.Annotations[key]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(val)
	if err != nil || n < 1 || n > 100 {
		return 0, annotationError(key, val, "want an integer from 1 to 100")
	}
	return n, nil
}

// healthCheckFrom reads the health check annotations; the probe is an
// HTTP GET of /healthz on the health check node port for
// externalTrafficPolicy Local, else, with proxyHealthPort set, of
// kube-proxy's own /healthz on that port (what GCE and KEP-3836 probe for
// externalTrafficPolicy Cluster: a node whose kube-proxy is down or
// draining gets no new connections), else a TCP connect to the first TCP
// listener's node port (the cloud's default).
func healthCheckFrom(svc *corev1.Service, proxyHealthPort int) (api.HealthCheck, error) {
	var hc api.HealthCheck
	var err error
	if hc.IntervalMs, err = durationMs(svc, AnnotationHealthCheckInterval); err != nil {
		return hc, err
	}
	if hc.TimeoutMs, err = durationMs(svc, AnnotationHealthCheckTimeout); err != nil {
		return hc, err
	}
	if hc.HealthyThreshold, err = threshold(svc, AnnotationHealthyThreshold); err != nil {
		return hc, err
	}
	if hc.UnhealthyThreshold, err = threshold(svc, AnnotationUnhealthyThreshold); err != nil {
		return hc, err
	}
	// A probe that may outlast the interval overlaps the next one: an
	// explicit timeout longer than the interval is refused, and the default
	// timeout shrinks to an explicit interval shorter than it.
	eff := hc.WithDefaults()
	switch {
	case eff.TimeoutMs <= eff.IntervalMs:
	case hc.TimeoutMs != 0:
		return hc, fmt.Errorf("annotation %s=%q must not be longer than %s (%s)",
			AnnotationHealthCheckTimeout, svc.Annotations[AnnotationHealthCheckTimeout],
			AnnotationHealthCheckInterval, time.Duration(eff.IntervalMs)*time.Millisecond)
	default:
		hc.TimeoutMs = hc.IntervalMs
	}
	// kube-proxy's health check node port accepts every connection and
	// answers /healthz with 503 on a node without a local endpoint: only
	// an HTTP probe keeps such nodes out.
	switch {
	case svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort > 0:
		hc.Port, hc.Path = int(svc.Spec.HealthCheckNodePort), "/healthz"
	case proxyHealthPort > 0:
		hc.Port, hc.Path = proxyHealthPort, "/healthz"
	}
	return hc, nil
}

func ipModeFrom(svc *corev1.Service) (corev1.LoadBalancerIPMode, error) {
	pp, err := proxyProtocolFrom(svc)
	if err != nil {
		return "", err
	}
	val, ok := svc.Annotations[AnnotationIPMode]
	switch {
	case !ok && pp != "":
		return corev1.LoadBalancerIPModeProxy, nil
	case !ok:
		return corev1.LoadBalancerIPModeVIP, nil
	}
	switch m := corev1.LoadBalancerIPMode(val); m {
	case corev1.LoadBalancerIPModeVIP:
		if pp != "" {
			return "", annotationError(AnnotationIPMode, val, "VIP lets kube-proxy take in-cluster clients straight to the pods, "+
				"without the PROXY protocol header "+AnnotationProxyProtocol+" asks for: leave it out or set Proxy")
		}
		return m, nil
	case corev1.LoadBalancerIPModeProxy:
		return m, nil
	}
	return "", annotationError(AnnotationIPMode, val, "want VIP or Proxy")
}

func proxyProtocolFrom(svc *corev1.Service) (api.ProxyProtocol, error) {
	val, ok := svc.Annotations[AnnotationProxyProtocol]
	if !ok {
		return "", nil
	}
	switch v := api.ProxyProtocol(val); v {
	case api.ProxyProtocolV1, api.ProxyProtocolV2:
		return v, nil
	}
	return "", annotationError(AnnotationProxyProtocol, val, "want v1 or v2")
}
