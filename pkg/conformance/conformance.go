package conformance

import (
	"context"
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// T is what the kit needs of a test: *testing.T through Run, or any
// implementation through RunT (the kit's own tests record with one).
type T interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	// Run runs f as a subtest called name and reports whether it passed.
	Run(name string, f func(T)) bool
}

// Config is the provider under test and what the kit may do with it.
type Config struct {
	// Provider is the provider under test, built as the daemon builds it.
	Provider cloudprovider.Interface
	// ClusterName is passed to every call that takes one; default
	// "conformance".
	ClusterName string
	// Instances are Nodes, as their kubelets register them (a name, and a
	// spec.providerID when the kubelet sets one), whose machines exist.
	Instances []*corev1.Node
	// Gone are Nodes whose machines do not exist (deleted, or never
	// created).
	Gone []*corev1.Node
	// Service is the LoadBalancer Service the load-balancer checks ensure
	// and delete, with a UID no load balancer exists for yet; nil uses a
	// TCP port 80 Service in namespace "conformance" with the fields the
	// API server defaults set as it sets them (sessionAffinity None,
	// externalTrafficPolicy Cluster).
	Service *corev1.Service
	// Route is the route the route checks create and delete; nil uses
	// 10.254.254.0/24 to the first of Instances.
	Route *cloudprovider.Route
	// FailAfter makes the cloud answer the next n calls as usual and fail
	// every later one (a dropped connection, a 500) until disarm is
	// called. Nil leaves EnsureConvergesAfterPartialFailure out.
	FailAfter func(n int) (disarm func())
	// Throttle makes the cloud throttle its callers until undo is called.
	// Nil leaves ThrottlingIsARetryError out.
	Throttle func() (undo func())
	// Timeout bounds each check, including the waits a provider asks for
	// with a RetryError; default 2 minutes.
	Timeout time.Duration
	// Strict fails the recommended checks too. By default a recommended
	// check that fails is logged and listed in Report.Recommended: Stratus
	// does not rely on that behaviour, but other tools and controllers
	// may, and a provider that has it is easier to operate.
	Strict bool
}

// Report says which checks ran and why the others did not.
type Report struct {
	// Ran lists the checks that ran, by subtest path (Group/Check).
	Ran []string
	// NotRun maps each check that did not run to the reason.
	NotRun map[string]string
	// Recommended maps each recommended check the provider fails to what
	// went wrong (empty when all pass, and always empty with Strict, where
	// they fail the test instead).
	Recommended map[string]string
}

// Run runs every applicable check as a subtest of t.
func Run(t *testing.T, cfg Config) Report {
	t.Helper()
	return RunT(testingT{t}, cfg)
}

// RunT is Run for any T.
func RunT(t T, cfg Config) Report {
	t.Helper()
	s, err := newSuite(cfg)
	rep := Report{NotRun: map[string]string{}, Recommended: map[string]string{}}
	if err != nil {
		t.Errorf("conformance: %v", err)
		return rep
	}
	for _, g := range groups() {
		var run []check
		for _, c := range g.checks {
			if reason := c.needs(s); reason != "" {
				rep.NotRun[g.name+"/"+c.name] = reason
				continue
			}
			run = append(run, c)
		}
		if len(run) == 0 {
			continue
		}
		t.Run(g.name, func(t T) {
			for _, c := range run {
				t.Run(c.name, func(t T) {
					// Here, not before t.Run: go test -run may filter the
					// subtest out, and then it did not run.
					rep.Ran = append(rep.Ran, g.name+"/"+c.name)
					if msg := s.run(t, c); msg != "" {
						rep.Recommended[g.name+"/"+c.name] = msg
					}
				})
			}
		})
	}
	for name, reason := range rep.NotRun {
		t.Logf("conformance: %s not run: %s", name, reason)
	}
	return rep
}

// check is one behaviour: what it needs, how to test it, and why Stratus
// cares, printed when it fails. A recommended check tests a behaviour
// Stratus' controllers do not rely on; it fails the test only with
// Config.Strict.
type check struct {
	name        string
	why         string
	recommended bool
	needs       func(*suite) string
	test        func(context.Context, *suite) error
	// cleanup, when set, runs after the check whatever its outcome (a
	// failure or a panic half-way included) and removes what the check
	// may have left in the cloud, so that the next check is not blamed
	// for it.
	cleanup func(context.Context, *suite) error
}

type group struct {
	name   string
	checks []check
}

// groups lists the checks in the order they run: routes last, since a
// provider that fails them may leave the cloud in a state other checks
// would trip on.
func groups() []group {
	return []group{
		{"Instances", instanceChecks()},
		{"LoadBalancer", append(loadBalancerChecks(), endpointChecks()...)},
		{"Ownership", ownershipChecks()},
		{"Modifications", modificationChecks()},
		{"Errors", errorChecks()},
		{"Routes", routeChecks()},
	}
}

// suite is the provider's capabilities, looked up once.
type suite struct {
	cfg        Config
	instances  cloudprovider.InstancesV2 // nil when the provider has none
	legacy     bool                      // instances adapts the legacy Instances
	instLister cloud.InstanceLister
	lb         cloudprovider.LoadBalancer
	lbLister   cloud.LoadBalancerLister
	// families is what the LoadBalancer's IPFamilyLister declares; nil
	// without one or when it lists none.
	families []corev1.IPFamily
	routes   cloudprovider.Routes
}

func newSuite(cfg Config) (*suite, error) {
	if cfg.Provider == nil {
		return nil, fmt.Errorf("Config.Provider is nil")
	}
	if cfg.ClusterName == "" {
		cfg.ClusterName = "conformance"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	if cfg.Service == nil {
		cfg.Service = defaultService("conformance-lb", "conformance-uid-1")
	}
	s := &suite{cfg: cfg}
	p := cfg.Provider
	// The node controllers see a provider as the daemon does: its
	// InstancesV2, or its legacy Instances (and Zones) adapted.
	if in, ok := p.InstancesV2(); ok && in != nil {
		s.instances = in
	} else if in, ok := p.Instances(); ok && in != nil {
		var z cloudprovider.Zones
		if zones, ok := p.Zones(); ok {
			z = zones
		}
		s.instances, s.legacy = cloud.InstancesV2FromV1(p.ProviderName(), in, z), true
	}
	if l, ok := p.(cloud.InstanceLister); ok {
		s.instLister = l
	} else if in, ok := p.InstancesV2(); ok {
		s.instLister, _ = in.(cloud.InstanceLister)
	}
	if lb, ok := p.LoadBalancer(); ok && lb != nil {
		s.lb = lb
		s.lbLister, _ = p.(cloud.LoadBalancerLister)
		if f, ok := lb.(cloud.IPFamilyLister); ok {
			s.families = f.LoadBalancerIPFamilies()
		}
	}
	if r, ok := p.Routes(); ok && r != nil {
		s.routes = r
	}
	return s, nil
}

// run runs one check; a recommended check that fails without Strict is
// logged, and its message returned, instead of failing t.
func (s *suite) run(t T, c check) string {
	t.Helper()
	err := s.guarded(c.name, c.test)
	if c.cleanup != nil {
		if cerr := s.guarded(c.name+" cleanup", c.cleanup); cerr != nil {
			t.Logf("conformance: cleaning up after %s failed, so a later check may fail because of what it left: %v", c.name, cerr)
		}
	}
	switch {
	case err == nil:
		return ""
	case c.recommended && !s.cfg.Strict:
		msg := fmt.Sprintf("%v\nWhy it is recommended: %s", err, c.why)
		t.Logf("conformance: recommended, not required (Config.Strict fails it): %s", msg)
		return msg
	default:
		t.Errorf("%v\nWhy it matters: %s", err, c.why)
		return ""
	}
}

// guarded runs fn within the check's time limit and turns a panic in the
// provider into the check's error, so that one broken call fails its
// check, not the whole test binary.
func (s *suite) guarded(name string, fn func(context.Context, *suite) error) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: the provider panicked: %v\n%s", name, r, debug.Stack())
		}
	}()
	return fn(ctx, s)
}

// defaultService is a LoadBalancer Service as the daemon reads it from
// the API server, which defaults sessionAffinity to None and
// externalTrafficPolicy to Cluster: providers read these fields, and some
// refuse a Service without them (AWS' refuses any sessionAffinity but
// None), which no Service the daemon hands them lacks.
func defaultService(name, uid string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "conformance", Name: name, UID: types.UID(uid)},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			Ports:                 []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}},
			SessionAffinity:       corev1.ServiceAffinityNone,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
		},
	}
}

// retrying calls fn until it returns something other than a RetryError,
// waiting as long as each RetryError asks (within ctx), as the daemon's
// controllers do.
func retrying[R any](ctx context.Context, fn func(context.Context) (R, error)) (R, error) {
	for {
		v, err := fn(ctx)
		d, ok := cloud.RetryAfter(err)
		if !ok {
			return v, err
		}
		timer := time.NewTimer(min(max(d, 10*time.Millisecond), 10*time.Second))
		select {
		case <-ctx.Done():
			timer.Stop()
			return v, fmt.Errorf("%w (still asked to retry when the check's time ran out: %w)", err, ctx.Err())
		case <-timer.C:
		}
	}
}

// testingT adapts *testing.T to T.
type testingT struct{ *testing.T }

func (t testingT) Run(name string, f func(T)) bool {
	return t.T.Run(name, func(t *testing.T) { f(testingT{t}) })
}

func (s *suite) needInstances() string { return s.needNodes(s.cfg.Instances, "Config.Instances") }

func (s *suite) needGone() string { return s.needNodes(s.cfg.Gone, "Config.Gone") }

// needNodes says why checks over nodes (the field called field) cannot run.
func (s *suite) needNodes(nodes []*corev1.Node, field string) string {
	if reason := s.needInstancesOrGone(); reason != "" {
		return reason
	}
	if len(nodes) == 0 {
		return field + " is empty"
	}
	return ""
}

func (s *suite) needLB() string {
	if s.lb == nil {
		return "the provider implements no LoadBalancer"
	}
	return ""
}
