package conformance_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/fake"

	"github.com/stratus-ccm/stratus/pkg/conformance"
)

// recorder is a conformance.T that records each check's failures instead
// of failing the test, so a test can assert which checks a provider fails.
type recorder struct {
	path string
	root *recording
}

type recording struct {
	mu       sync.Mutex
	failures map[string][]string // check path → messages
	// filtered are subtest paths Run does not run, as go test -run
	// leaves out the subtests it does not match.
	filtered map[string]bool
}

func newRecorder() *recorder {
	return &recorder{root: &recording{failures: map[string][]string{}}}
}

func (r *recorder) Helper()             {}
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Errorf(format string, args ...any) {
	r.root.mu.Lock()
	defer r.root.mu.Unlock()
	r.root.failures[r.path] = append(r.root.failures[r.path], fmt.Sprintf(format, args...))
}

func (r *recorder) Run(name string, f func(conformance.T)) bool {
	path := name
	if r.path != "" {
		path = r.path + "/" + name
	}
	if r.root.filtered[path] {
		return true
	}
	child := &recorder{path: path, root: r.root}
	f(child)
	r.root.mu.Lock()
	defer r.root.mu.Unlock()
	for p := range r.root.failures {
		if p == path || strings.HasPrefix(p, path+"/") {
			return false
		}
	}
	return true
}

func (r *recorder) failed() []string {
	return slices.Sorted(maps.Keys(r.root.failures))
}

func memConfig(c *memCloud) conformance.Config {
	return conformance.Config{
		Provider:  c,
		Instances: []*corev1.Node{node("m-1", ""), node("m-2", "mem://i-2")},
		Gone:      []*corev1.Node{node("m-gone", ""), node("other", "mem://i-9")},
		FailAfter: c.FailAfter,
		Throttle:  c.Throttle,
	}
}

// TestKitFailsExactlyTheBrokenChecks runs the kit against an in-memory
// provider, first correct (every check passes: the kit has no false
// alarm), then with one defect at a time: exactly the checks that defect
// breaks fail, each with its explanation.
func TestKitFailsExactlyTheBrokenChecks(t *testing.T) {
	cases := map[string]struct {
		d         defects
		want      []string // failed checks
		says      string   // in the failure message
		recommend []string // recommended checks failed (logged, not failed)
	}{
		"correct":             {},
		"exists false":        {d: defects{existsFalse: true}, want: []string{"Instances/ExistingInstancesExist"}, says: "InstanceExists(m-1) = false for a machine that exists"},
		"unwrapped not found": {d: defects{unwrappedNotFound: true}, want: []string{"Instances/GoneInstanceMetadataIsInstanceNotFound"}, says: "errors.Is(err, cloudprovider.InstanceNotFound) is false"},
		// Answers that change between calls also make the list disagree
		// with the per-instance calls made after it.
		"unstable addresses": {d: defects{unstableAddresses: true},
			want: []string{"Instances/ListerAgreesWithPerInstanceCalls", "Instances/MetadataIsStable"}, says: "InstanceMetadata"},
		"lister misses one":   {d: defects{listerMissing: true}, want: []string{"Instances/ListerAgreesWithPerInstanceCalls"}, says: "node m-2 (machine exists) is not in ListInstances' answer"},
		"name from version":   {d: defects{nameFromVersion: true}, want: []string{"LoadBalancer/NameIsStable"}, says: "GetLoadBalancerName changed"},
		"delete missing errs": {d: defects{deleteMissingErrs: true}, want: []string{"LoadBalancer/DeleteIsIdempotent", "LoadBalancer/DeletingMissingSucceeds"}, says: "not found"},
		"leak on retry":       {d: defects{leakOnRetry: true}, want: []string{"LoadBalancer/EnsureConvergesAfterPartialFailure"}, says: "shows 2 load balancers"},
		"plain throttle":      {d: defects{plainThrottle: true}, want: []string{"Errors/ThrottlingIsARetryError"}, says: "has no RetryError in its chain"},
		"nil ingress IP":      {d: defects{ingressIP: net.IP(nil).String()}, want: []string{"LoadBalancer/EnsureReturnsIngress"}, says: `ingress[0].ip "<nil>" is not an IP address`},
		// Addresses Go parses and the API server refuses in a Service's
		// status (StrictIPCIDRValidation, on by default since 1.36).
		"zoned ingress IP": {d: defects{ingressIP: "fe80::1%eth0"}, want: []string{"LoadBalancer/EnsureReturnsIngress"}, says: `ingress[0].ip "fe80::1%eth0" is not an IP address`},
		"IPv4-mapped IPv6": {d: defects{ingressIP: "::ffff:192.0.2.1"}, want: []string{"LoadBalancer/EnsureReturnsIngress"}, says: "must not be an IPv4-mapped IPv6 address"},
		"leading zeros":    {d: defects{ingressIP: "192.0.2.010"}, want: []string{"LoadBalancer/EnsureReturnsIngress"}, says: `ingress[0].ip "192.0.2.010" is not an IP address`},
		"IPv6 ingress":     {d: defects{ingressIP: "2001:db8::10"}},
		// The IPFamilyLister's word is checked against the answers.
		"IPv4 only":      {d: defects{ipv4Only: true}, want: []string{"LoadBalancer/ServesDeclaredFamilies"}, says: "with no IPv6 address though the provider declares IPv6"},
		"extra family":   {d: defects{wrongOrder: true}, want: []string{"LoadBalancer/ServesDeclaredFamilies"}, says: "a family the Service did not ask for"},
		"IPv4 declared":  {d: defects{families: []corev1.IPFamily{corev1.IPv4Protocol}, ipv4Only: true}},
		"unknown family": {d: defects{families: []corev1.IPFamily{"ipv6"}}, want: []string{"LoadBalancer/ServesDeclaredFamilies"}, says: `LoadBalancerIPFamilies()[0] is "ipv6"`},
		"family twice":   {d: defects{families: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv4Protocol}}, want: []string{"LoadBalancer/ServesDeclaredFamilies"}, says: `lists "IPv4" twice`},
		// A panic fails the checks whose calls panic, and only them: the
		// checks after them run.
		"panics": {d: defects{panicDeleteMissing: true}, want: []string{"LoadBalancer/DeleteIsIdempotent", "LoadBalancer/DeletingMissingSucceeds", "Ownership/ScopedToCluster"},
			recommend: []string{"Ownership/ScopedToClusterWithTheSameUID"}, says: "the provider panicked: nil map lookup of conformance-"},
		// Load balancers found by Service UID in every cluster: another
		// cluster's orphan collector sees them, and a cluster restored
		// from a backup (same UIDs) takes them over.
		"ignores cluster": {d: defects{ignoresCluster: true}, want: []string{"Ownership/ScopedToCluster"},
			recommend: []string{"Ownership/ScopedToClusterWithTheSameUID"}, says: "its orphan collector would delete it"},
		// Stratus lists routes before it creates or deletes one, so
		// idempotent route calls are recommended, not required. The route
		// CreateIsIdempotent leaves behind when its second call fails is
		// cleaned up, so DeleteIsIdempotent, whose calls work, passes.
		"route create errs": {d: defects{routeCreateErrs: true}, recommend: []string{"Routes/CreateIsIdempotent"}, says: "already exists"},
		// Endpoint targets: a second ensure of the same endpoints that
		// writes, and a lister that does not report them.
		"endpoints rewritten": {d: defects{rewritesEndpoints: true}, want: []string{"LoadBalancer/EndpointTargets"}, says: "with the same endpoints changed the load balancer"},
		"endpoints unlisted": {d: defects{endpointsUnlisted: true}, want: []string{"LoadBalancer/EndpointTargets"},
			says: `ListLoadBalancers reports endpoints [] for the load balancer of Service conformance/conformance-lb-endpoints, ensured with ["192.0.2.10:8080" "192.0.2.11:8080"]`},
		"route delete kept": {d: defects{routeDeleteKept: true}, want: []string{"Routes/DeletedRouteIsNotListed"},
			recommend: []string{"Routes/DeleteIsIdempotent"}, says: "ListRoutes shows 1 routes for 10.254.254.0/24, want 0"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			rec := newRecorder()
			rep := conformance.RunT(rec, memConfig(newMemCloud(c.d)))
			if len(rep.NotRun) != 0 {
				t.Errorf("not run: %v; the double supports every check", rep.NotRun)
			}
			if got := rec.failed(); !slices.Equal(got, c.want) {
				t.Fatalf("failed checks = %v, want %v; messages: %v", got, c.want, rec.root.failures)
			}
			for _, check := range c.want {
				msg := strings.Join(rec.root.failures[check], "\n")
				if !strings.Contains(msg, c.says) || !strings.Contains(msg, "Why it matters: ") {
					t.Errorf("%s failed with %q, want it to say %q and why it matters", check, msg, c.says)
				}
			}
			if got := slices.Sorted(maps.Keys(rep.Recommended)); !slices.Equal(got, c.recommend) {
				t.Errorf("recommended checks failed = %v, want %v", got, c.recommend)
			}
			for _, check := range c.recommend {
				if msg := rep.Recommended[check]; !strings.Contains(msg, "Why it is recommended: ") {
					t.Errorf("%s says %q, want why it is recommended", check, msg)
				}
			}
			if len(c.recommend) == 0 {
				return
			}
			// With Strict the recommended checks fail like the others.
			strict := newRecorder()
			cfg := memConfig(newMemCloud(c.d))
			cfg.Strict = true
			if rep := conformance.RunT(strict, cfg); len(rep.Recommended) != 0 {
				t.Errorf("Strict still lists %v as recommended", rep.Recommended)
			}
			if got, want := strict.failed(), slices.Sorted(slices.Values(append(slices.Clone(c.want), c.recommend...))); !slices.Equal(got, want) {
				t.Errorf("Strict: failed checks = %v, want %v", got, want)
			}
		})
	}
}

// upstreamFake is upstream's k8s.io/cloud-provider/fake configured as a
// consistent cloud, as examples/fake-provider configures it.
func upstreamFake(routes bool) *fake.Cloud {
	return &fake.Cloud{
		Provider:           "fake",
		EnableInstancesV2:  true,
		ExistsByProviderID: true,
		DisableRoutes:      !routes,
		OverrideInstanceMetadata: func(_ context.Context, n *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
			return &cloudprovider.InstanceMetadata{ProviderID: "fake://" + n.Name, InstanceType: "small",
				NodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}, Zone: "a", Region: "r"}, nil
		},
		ExternalIP: net.ParseIP("203.0.113.10"),
		Balancers:  map[string]fake.Balancer{},
		RouteMap:   map[string]*fake.Route{},
	}
}

// TestUpstreamFakeConforms runs the kit against upstream's fake provider:
// its instances and load balancers pass every check that applies (it has
// no machine that is gone, no fault injection, no throttling and no
// listers, so those checks do not run).
func TestUpstreamFakeConforms(t *testing.T) {
	rep := conformance.Run(t, conformance.Config{Provider: upstreamFake(false), Instances: []*corev1.Node{node("worker-1", "")}})
	wantRan := []string{
		"Instances/ExistingInstancesExist", "Instances/MetadataOfExistingInstances", "Instances/MetadataIsStable",
		"LoadBalancer/NameIsStable", "LoadBalancer/MissingIsReportedMissing", "LoadBalancer/DeletingMissingSucceeds",
		"LoadBalancer/EnsureReturnsIngress", "LoadBalancer/EnsureIsIdempotent", "LoadBalancer/DeleteIsIdempotent",
		"Ownership/ScopedToCluster", "Ownership/ScopedToClusterWithTheSameUID",
	}
	if !slices.Equal(rep.Ran, wantRan) {
		t.Errorf("ran %v, want %v", rep.Ran, wantRan)
	}
	// Without the extension the endpoint check is skipped, not failed.
	if why := rep.NotRun["LoadBalancer/EndpointTargets"]; !strings.Contains(why, "does not implement cloud.EndpointTargeter") {
		t.Errorf("LoadBalancer/EndpointTargets not run because %q, want the missing extension", why)
	}
}

// TestUpstreamFakeLegacyInstancesConform runs the instance checks against
// upstream's fake with only the legacy Instances and Zones (no
// InstancesV2), seen through the adapter Stratus' node controllers use:
// with instance IDs, and without (InstanceID NotImplemented, so the
// metadata has no providerID, which such a provider may leave empty).
func TestUpstreamFakeLegacyInstancesConform(t *testing.T) {
	for name, idErr := range map[string]error{"with instance IDs": nil, "without instance IDs": cloudprovider.NotImplemented} {
		t.Run(name, func(t *testing.T) {
			f := upstreamFake(false)
			f.EnableInstancesV2 = false
			f.DisableLoadBalancers = true
			f.ExtID = map[types.NodeName]string{"worker-1": "i-1"}
			if idErr != nil {
				f.ExtIDErr = map[types.NodeName]error{"worker-1": idErr}
			}
			f.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
			f.Zone = cloudprovider.Zone{FailureDomain: "a", Region: "r"}
			rep := conformance.Run(t, conformance.Config{Provider: f, Instances: []*corev1.Node{node("worker-1", "")}})
			want := []string{"Instances/ExistingInstancesExist", "Instances/MetadataOfExistingInstances", "Instances/MetadataIsStable"}
			if !slices.Equal(rep.Ran, want) {
				t.Errorf("ran %v, want %v", rep.Ran, want)
			}
		})
	}
}

// TestUpstreamFakeRoutes runs the route checks against upstream's fake:
// its routes are listed when created and gone when deleted, which is what
// Stratus relies on, so it passes; CreateRoute refuses a route that exists
// (and then fails every later call through its shared Err field), so the
// two recommended idempotency checks are reported, and fail with Strict.
func TestUpstreamFakeRoutes(t *testing.T) {
	rep := conformance.Run(t, conformance.Config{Provider: upstreamFake(true), Instances: []*corev1.Node{node("worker-1", "")}})
	for _, c := range []string{"Routes/CreatedRouteIsListed", "Routes/DeletedRouteIsNotListed", "Routes/CreateIsIdempotent", "Routes/DeleteIsIdempotent"} {
		if !slices.Contains(rep.Ran, c) {
			t.Errorf("%s did not run: %v", c, rep.NotRun)
		}
	}
	if got, want := slices.Sorted(maps.Keys(rep.Recommended)), []string{"Routes/CreateIsIdempotent", "Routes/DeleteIsIdempotent"}; !slices.Equal(got, want) {
		t.Fatalf("recommended checks failed = %v, want %v", got, want)
	}
	if msg := rep.Recommended["Routes/CreateIsIdempotent"]; !strings.Contains(msg, "already exists") {
		t.Errorf("CreateIsIdempotent says %q, want the fake's 'already exists'", msg)
	}
	rec := newRecorder()
	conformance.RunT(rec, conformance.Config{Provider: upstreamFake(true), Instances: []*corev1.Node{node("worker-1", "")}, Strict: true})
	if got, want := rec.failed(), []string{"Routes/CreateIsIdempotent", "Routes/DeleteIsIdempotent"}; !slices.Equal(got, want) {
		t.Fatalf("Strict: failed checks = %v, want %v; messages: %v", got, want, rec.root.failures)
	}
}

// TestRanListsOnlyWhatRan: checks a test filter leaves out (go test -run)
// are not reported as run.
func TestRanListsOnlyWhatRan(t *testing.T) {
	rec := newRecorder()
	rec.root.filtered = map[string]bool{"Routes": true, "LoadBalancer/EnsureIsIdempotent": true}
	rep := conformance.RunT(rec, memConfig(newMemCloud(defects{})))
	if len(rec.failed()) != 0 {
		t.Fatalf("failures: %v", rec.root.failures)
	}
	for _, c := range rep.Ran {
		if strings.HasPrefix(c, "Routes/") || c == "LoadBalancer/EnsureIsIdempotent" {
			t.Errorf("Ran lists %s, which the filter left out", c)
		}
	}
	if !slices.Contains(rep.Ran, "LoadBalancer/EnsureReturnsIngress") || !slices.Contains(rep.Ran, "Instances/ExistingInstancesExist") {
		t.Errorf("Ran = %v, want the checks the filter kept", rep.Ran)
	}
}

// TestUpstreamFakeWithoutExternalIPFails: upstream's fake without an
// ExternalIP answers the ingress IP "<nil>", which the API server refuses
// in a Service's status; the kit says so.
func TestUpstreamFakeWithoutExternalIPFails(t *testing.T) {
	f := upstreamFake(false)
	f.ExternalIP = nil
	rec := newRecorder()
	conformance.RunT(rec, conformance.Config{Provider: f, Instances: []*corev1.Node{node("worker-1", "")}})
	if got, want := rec.failed(), []string{"LoadBalancer/EnsureReturnsIngress"}; !slices.Equal(got, want) {
		t.Fatalf("failed checks = %v, want %v; messages: %v", got, want, rec.root.failures)
	}
	if msg := strings.Join(rec.root.failures["LoadBalancer/EnsureReturnsIngress"], "\n"); !strings.Contains(msg, `"<nil>" is not an IP address`) {
		t.Errorf("EnsureReturnsIngress says %q, want the bad IP named", msg)
	}
}
