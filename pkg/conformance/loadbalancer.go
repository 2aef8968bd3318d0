package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func loadBalancerChecks() []check {
	return []check{
		{
			name:  "NameIsStable",
			why:   "the service controller and a takeover from another CCM find a Service's load balancer by this name: one that changes between calls, or that two Services share, leaks load balancers or deletes another Service's.",
			needs: (*suite).needLB,
			test:  testNameIsStable,
		},
		{
			name:  "MissingIsReportedMissing",
			why:   "after a failed update the service controller asks GetLoadBalancer whether the load balancer still exists and recreates it if not; exists=true (or an error) for a missing one leaves the Service without a load balancer.",
			needs: (*suite).needLB,
			test:  testMissingIsReportedMissing,
		},
		{
			name:  "DeletingMissingSucceeds",
			why:   "a Service's finalizer is removed only once EnsureLoadBalancerDeleted succeeds; an error for a load balancer that is already gone blocks the Service's deletion forever.",
			needs: (*suite).needLB,
			test:  testDeletingMissingSucceeds,
		},
		{
			name:  "EnsureReturnsIngress",
			why:   "the Service's status.loadBalancer.ingress is copied from this status; an entry without IP or hostname leaves clients nothing to connect to.",
			needs: (*suite).needLB,
			test:  testEnsureReturnsIngress,
		},
		{
			name:  "EnsureIsIdempotent",
			why:   "the service controller ensures again after every restart, resync and node change: a second call with the same input must change nothing and answer the same status, or each resync rewrites the Service or creates another load balancer.",
			needs: (*suite).needLB,
			test:  testEnsureIdempotent,
		},
		{
			name: "EnsureConvergesAfterPartialFailure",
			why:  "a call that fails half-way (a timeout after the cloud created something) is retried with the same input; the retry must finish the job, with one load balancer and the same status as a clean run, not fail forever or leak a second one.",
			needs: func(s *suite) string {
				if s.cfg.FailAfter == nil {
					return "Config.FailAfter is nil (no way to inject a failure)"
				}
				return s.needLB()
			},
			test: testConvergence,
		},
		{
			name: "ListerAgreesWithPerServiceCalls",
			why:  "with the LoadBalancerLister extension the service controller finds orphaned load balancers (whose Service is gone) and deletes them with EnsureLoadBalancerDeleted on a Service rebuilt from the listed namespace, name and UID: a listed entry that names the wrong Service deletes a live one, a missing one leaks.",
			needs: func(s *suite) string {
				if s.lbLister == nil {
					return "the provider does not implement cloud.LoadBalancerLister"
				}
				return s.needLB()
			},
			test: testLBLister,
		},
		{
			name: "ServesDeclaredFamilies",
			why:  "with the IPFamilyLister extension the service controller hands the provider only the IP families it declares and takes its word that it serves them: a Service of a declared family whose status has no address of it (or one of another family, which kube-proxy ignores) is unreachable on that family though the Service says it is served.",
			needs: func(s *suite) string {
				if s.families == nil {
					return "the provider's LoadBalancer does not implement cloud.IPFamilyLister (or lists no family)"
				}
				return s.needLB()
			},
			test: testServesDeclaredFamilies,
		},
		{
			name:  "DeleteIsIdempotent",
			why:   "deletion is retried until it succeeds, including after a success whose answer was lost; the second call must succeed too, and the load balancer must then be reported missing.",
			needs: (*suite).needLB,
			test:  testDeleteIdempotent,
		},
	}
}

func (s *suite) otherService(name, uid string) *corev1.Service {
	svc := s.cfg.Service.DeepCopy()
	svc.Name, svc.UID = name, types.UID(uid)
	return svc
}

func (s *suite) ensure(svc *corev1.Service) func(context.Context) (*corev1.LoadBalancerStatus, error) {
	return func(ctx context.Context) (*corev1.LoadBalancerStatus, error) {
		return s.lb.EnsureLoadBalancer(ctx, s.cfg.ClusterName, svc.DeepCopy(), s.cfg.Instances)
	}
}

func (s *suite) deleteLB(svc *corev1.Service) func(context.Context) (struct{}, error) {
	return func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.lb.EnsureLoadBalancerDeleted(ctx, s.cfg.ClusterName, svc.DeepCopy())
	}
}

func testNameIsStable(ctx context.Context, s *suite) error {
	svc := s.cfg.Service
	name := s.lb.GetLoadBalancerName(ctx, s.cfg.ClusterName, svc)
	if name == "" {
		return errors.New("GetLoadBalancerName returned an empty name")
	}
	changed := svc.DeepCopy()
	changed.ResourceVersion = "999"
	changed.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	if again := s.lb.GetLoadBalancerName(ctx, s.cfg.ClusterName, changed); again != name {
		return fmt.Errorf("GetLoadBalancerName changed from %q to %q for the same Service", name, again)
	}
	other := s.otherService("conformance-other", "conformance-uid-other")
	if o := s.lb.GetLoadBalancerName(ctx, s.cfg.ClusterName, other); o == name {
		return fmt.Errorf("GetLoadBalancerName gives two Services (UIDs %s and %s) the same name %q", svc.UID, other.UID, name)
	}
	return nil
}

// hasIngress checks the status as the API server validates
// status.loadBalancer.ingress: an IP must parse as one (upstream's fake
// answers "<nil>" for a nil net.IP, which the API server refuses), a
// hostname must be a DNS name and not an IP.
func hasIngress(st *corev1.LoadBalancerStatus) error {
	if st == nil || len(st.Ingress) == 0 {
		return fmt.Errorf("EnsureLoadBalancer succeeded with no ingress: %+v", st)
	}
	for i, in := range st.Ingress {
		if in.IP == "" && in.Hostname == "" {
			return fmt.Errorf("EnsureLoadBalancer's ingress[%d] has neither IP nor hostname: %+v", i, in)
		}
		if in.IP != "" {
			// The API server's own check, strict as it is since 1.36
			// (StrictIPCIDRValidation on by default): besides what does
			// not parse (a zone, "<nil>"), it refuses leading zeros and
			// IPv4-mapped IPv6.
			path := field.NewPath("status", "loadBalancer", "ingress").Index(i).Child("ip")
			if errs := validation.IsValidIPForLegacyField(path, in.IP, true, nil); len(errs) > 0 {
				return fmt.Errorf("EnsureLoadBalancer's ingress[%d].ip %q is not an IP address the API server accepts in a Service's status: %w", i, in.IP, errs.ToAggregate())
			}
		}
		if in.Hostname != "" {
			if _, err := netip.ParseAddr(in.Hostname); err == nil {
				return fmt.Errorf("EnsureLoadBalancer's ingress[%d].hostname %q is an IP address; the API server wants it in ip", i, in.Hostname)
			}
			if msgs := validation.IsDNS1123Subdomain(in.Hostname); len(msgs) > 0 {
				return fmt.Errorf("EnsureLoadBalancer's ingress[%d].hostname %q is not a DNS name, which the API server refuses: %s", i, in.Hostname, strings.Join(msgs, "; "))
			}
		}
	}
	return nil
}

func testEnsureIdempotent(ctx context.Context, s *suite) error {
	first, err := retrying(ctx, s.ensure(s.cfg.Service))
	if err != nil {
		return fmt.Errorf("EnsureLoadBalancer: %w", err)
	}
	second, err := retrying(ctx, s.ensure(s.cfg.Service))
	if err != nil {
		return fmt.Errorf("EnsureLoadBalancer a second time with the same input: %w", err)
	}
	if !reflect.DeepEqual(first, second) {
		return fmt.Errorf("EnsureLoadBalancer answered %+v, then %+v for the same input", first, second)
	}
	return s.exactlyOneListed(ctx, s.cfg.Service)
}

// exactlyOneListed checks, when the provider can list, that svc has one
// load balancer.
func (s *suite) exactlyOneListed(ctx context.Context, svc *corev1.Service) error {
	if s.lbLister == nil {
		return nil
	}
	n, err := s.listedFor(ctx, svc)
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("ListLoadBalancers shows %d load balancers for Service %s/%s (UID %s), want 1", n, svc.Namespace, svc.Name, svc.UID)
	}
	return nil
}

func (s *suite) listedFor(ctx context.Context, svc *corev1.Service) (int, error) {
	lbs, err := s.lbLister.ListLoadBalancers(ctx, s.cfg.ClusterName)
	if err != nil {
		return 0, fmt.Errorf("ListLoadBalancers: %w", err)
	}
	n := 0
	for _, lb := range lbs {
		if lb.ServiceUID == svc.UID {
			if lb.ServiceNamespace != svc.Namespace || lb.ServiceName != svc.Name {
				return 0, fmt.Errorf("ListLoadBalancers names Service %s/%s for UID %s, want %s/%s",
					lb.ServiceNamespace, lb.ServiceName, svc.UID, svc.Namespace, svc.Name)
			}
			n++
		}
	}
	return n, nil
}

// testConvergence fails the cloud after 0, 1, 2, ... calls during the
// creation of a fresh load balancer, retries cleanly each time, and stops
// once an armed call no longer fails (every step has been interrupted).
func testConvergence(ctx context.Context, s *suite) error {
	svc := s.otherService("conformance-partial", "conformance-uid-partial")
	defer func() { _, _ = retrying(context.WithoutCancel(ctx), s.deleteLB(svc)) }()
	var want *corev1.LoadBalancerStatus
	for n := 0; n < 16; n++ {
		armedErr := s.ensureArmed(ctx, svc, n)
		st, err := retrying(ctx, s.ensure(svc))
		if err != nil {
			return fmt.Errorf("EnsureLoadBalancer after a failure after %d calls (%w) did not converge: %w", n, armedErr, err)
		}
		if want == nil {
			want = st
		} else if !reflect.DeepEqual(want, st) {
			return fmt.Errorf("EnsureLoadBalancer after a failure after %d calls answered %+v, want %+v as before", n, st, want)
		}
		if err := s.exactlyOneListed(ctx, svc); err != nil {
			return fmt.Errorf("after a failure after %d calls: %w", n, err)
		}
		if armedErr == nil {
			return nil
		}
	}
	return errors.New("EnsureLoadBalancer still failed with the fault armed after 16 calls: the fault does not stop")
}

// ensureArmed ensures svc's load balancer with the cloud set to fail after
// n calls. The fault is disarmed however the call ends: a provider that
// panics under it must not leave it armed, or every later call of this
// check's cleanup and of the later checks fails with the injected fault
// and they are blamed for it.
func (s *suite) ensureArmed(ctx context.Context, svc *corev1.Service, n int) error {
	disarm := s.cfg.FailAfter(n)
	defer disarm()
	_, err := s.lb.EnsureLoadBalancer(ctx, s.cfg.ClusterName, svc.DeepCopy(), s.cfg.Instances)
	return err
}

func testLBLister(ctx context.Context, s *suite) error {
	if _, err := retrying(ctx, s.ensure(s.cfg.Service)); err != nil {
		return fmt.Errorf("EnsureLoadBalancer: %w", err)
	}
	if err := s.exactlyOneListed(ctx, s.cfg.Service); err != nil {
		return err
	}
	never := s.otherService("conformance-missing", "conformance-uid-missing")
	n, err := s.listedFor(ctx, never)
	if err != nil {
		return err
	}
	if n != 0 {
		return fmt.Errorf("ListLoadBalancers shows %d load balancers for a Service that never had one", n)
	}
	return nil
}

func testDeleteIdempotent(ctx context.Context, s *suite) error {
	svc := s.cfg.Service
	if _, err := retrying(ctx, s.ensure(svc)); err != nil {
		return fmt.Errorf("EnsureLoadBalancer: %w", err)
	}
	for i := range 2 {
		if _, err := retrying(ctx, s.deleteLB(svc)); err != nil {
			return fmt.Errorf("EnsureLoadBalancerDeleted (call %d): %w", i+1, err)
		}
	}
	_, exists, err := s.lb.GetLoadBalancer(ctx, s.cfg.ClusterName, svc)
	switch {
	case err != nil:
		return fmt.Errorf("after EnsureLoadBalancerDeleted, GetLoadBalancer failed: %w", err)
	case exists:
		return errors.New("after EnsureLoadBalancerDeleted, GetLoadBalancer says the load balancer exists")
	}
	if s.lbLister != nil {
		n, err := s.listedFor(ctx, svc)
		if err != nil {
			return fmt.Errorf("after EnsureLoadBalancerDeleted: %w", err)
		}
		if n != 0 {
			return fmt.Errorf("after EnsureLoadBalancerDeleted, ListLoadBalancers still shows %d for the Service", n)
		}
	}
	return nil
}

func testMissingIsReportedMissing(ctx context.Context, s *suite) error {
	svc := s.otherService("conformance-missing", "conformance-uid-missing")
	_, exists, err := s.lb.GetLoadBalancer(ctx, s.cfg.ClusterName, svc)
	switch {
	case err != nil:
		return fmt.Errorf("GetLoadBalancer of a Service that never had a load balancer failed: %w", err)
	case exists:
		return errors.New("GetLoadBalancer of a Service that never had a load balancer says it exists")
	}
	return nil
}

func testDeletingMissingSucceeds(ctx context.Context, s *suite) error {
	svc := s.otherService("conformance-missing", "conformance-uid-missing")
	if _, err := retrying(ctx, s.deleteLB(svc)); err != nil {
		return fmt.Errorf("EnsureLoadBalancerDeleted of a load balancer that never existed: %w", err)
	}
	return nil
}

func testEnsureReturnsIngress(ctx context.Context, s *suite) error {
	st, err := retrying(ctx, s.ensure(s.cfg.Service))
	if err != nil {
		return fmt.Errorf("EnsureLoadBalancer: %w", err)
	}
	return hasIngress(st)
}
