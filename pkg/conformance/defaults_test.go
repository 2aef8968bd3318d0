package conformance_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/conformance"
)

// strictServiceCloud is the in-memory double with a load balancer that,
// as AWS' provider does, refuses a Service whose sessionAffinity is not
// None and wants the externalTrafficPolicy the API server defaults.
type strictServiceCloud struct{ *memCloud }

func (c strictServiceCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c, true }

func (c strictServiceCloud) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	if svc.Spec.SessionAffinity != corev1.ServiceAffinityNone {
		return nil, fmt.Errorf("unsupported load balancer affinity: %q", svc.Spec.SessionAffinity)
	}
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		return nil, fmt.Errorf("externalTrafficPolicy %q is not what the API server defaults", svc.Spec.ExternalTrafficPolicy)
	}
	return c.memCloud.EnsureLoadBalancer(ctx, cluster, svc, nodes)
}

// TestDefaultServiceIsAsTheAPIServerDefaultsIt: without Config.Service the
// kit's Service has sessionAffinity None and externalTrafficPolicy
// Cluster, as every Service the daemon reads from the API server has, so
// a provider that refuses an empty affinity passes the load balancer
// checks.
func TestDefaultServiceIsAsTheAPIServerDefaultsIt(t *testing.T) {
	rec := newRecorder()
	cfg := memConfig(newMemCloud(defects{}))
	c := strictServiceCloud{cfg.Provider.(*memCloud)}
	cfg.Provider = c
	rep := conformance.RunT(rec, cfg)
	if failed := rec.failed(); len(failed) != 0 {
		t.Fatalf("failed checks = %v, want none; messages: %v", failed, rec.root.failures)
	}
	if !strings.Contains(strings.Join(rep.Ran, ","), "LoadBalancer/EnsureIsIdempotent") {
		t.Errorf("ran %v, want the load balancer checks", rep.Ran)
	}
}

// panicWhenArmedCloud is the in-memory double whose EnsureLoadBalancer
// panics while a fault is armed, as a provider over a client that panics
// on an unexpected answer does (AWS' over AWS' fakes, for one).
type panicWhenArmedCloud struct{ *memCloud }

func (c panicWhenArmedCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c, true }

func (c panicWhenArmedCloud) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	c.mu.Lock()
	armed := c.failAfter >= 0
	c.mu.Unlock()
	if armed {
		panic("Not implemented")
	}
	return c.memCloud.EnsureLoadBalancer(ctx, cluster, svc, nodes)
}

// TestFaultDisarmedAfterAProviderPanic: a provider that panics with a
// fault armed fails EnsureConvergesAfterPartialFailure alone; the fault is
// disarmed, so the checks after it do not fail with the injected error.
func TestFaultDisarmedAfterAProviderPanic(t *testing.T) {
	rec := newRecorder()
	cfg := memConfig(newMemCloud(defects{}))
	c := panicWhenArmedCloud{cfg.Provider.(*memCloud)}
	cfg.Provider, cfg.FailAfter = c, c.FailAfter
	conformance.RunT(rec, cfg)
	want := "LoadBalancer/EnsureConvergesAfterPartialFailure"
	if got := rec.failed(); len(got) != 1 || got[0] != want {
		t.Fatalf("failed checks = %v, want only %s; messages: %v", got, want, rec.root.failures)
	}
	if msg := strings.Join(rec.root.failures[want], "\n"); !strings.Contains(msg, "the provider panicked: Not implemented") {
		t.Errorf("%s says %q, want the panic", want, msg)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failAfter >= 0 {
		t.Errorf("the fault is still armed after the kit ran (failAfter=%d)", c.failAfter)
	}
}
