package main

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/conformance"

	"example.com/aws-provider/internal/awsfakes"
)

// outcome is what the kit made of one check.
type outcome string

const (
	passed      outcome = "passed"
	flagged     outcome = "flagged"     // a required check failed
	recommended outcome = "recommended" // a recommended check failed (logged)
	notRun      outcome = "not run"
)

// expect is one check's expected outcome, and what its message (or the
// reason it did not run) must say.
type expect struct {
	outcome outcome
	says    []string
}

// The causes of the findings, as docs/providers-aws.md explains them.
var (
	// AWS' fake EC2 panics "Not implemented" on DescribeSecurityGroups,
	// which a classic load balancer's creation and deletion call first.
	securityGroupsPanic = expect{flagged, []string{"the provider panicked: Not implemented", "ec2API.DescribeSecurityGroups"}}
	// AWS' fake EC2 panics on ModifyInstanceAttribute, which CreateRoute
	// calls first (to turn off the instance's source/destination check).
	routesPanic = expect{flagged, []string{"the provider panicked: Not implemented", "ec2API.ModifyInstanceAttribute"}}
	// AWS' fake ELBv2 answers DescribeLoadBalancers for any name but
	// "aid" with a plain error, not ELBv2's LoadBalancerNotFound.
	nlbNotFound = expect{flagged, []string{`NLB 'aid' could not be found`}}
)

func recommendedToo(e expect) expect { return expect{recommended, e.says} }

// Instances of the classic-ELB run: Nodes named by instance ID, one
// without a providerID (a Node being initialized), the others with one.
var (
	confRunning  = awsfakes.Instance{ID: "i-0c0000000000000a1", Zone: "us-west-2a", Type: "m5.large", PrivateIP: "10.0.1.11", PublicIP: "203.0.113.11"}
	confRunning2 = awsfakes.Instance{ID: "i-0c0000000000000a2", Zone: "us-west-2b", Type: "c5.xlarge", PrivateIP: "10.0.2.12"}
	confStopped  = awsfakes.Instance{ID: "i-0c0000000000000a3", Zone: "us-west-2c", Type: "t3.medium", PrivateIP: "10.0.3.13"}
	confTermed   = awsfakes.Instance{ID: "i-0c0000000000000a4", Zone: "us-west-2a", Type: "m5.large", PrivateIP: "10.0.1.14"}
	neverExisted = "i-0c0000000000000b1"
)

// TestConformanceOfAWSProvider runs pkg/conformance against AWS' own
// provider over AWS' own fakes, and asserts what the kit finds, check by
// check: what the provider does that the kit flags, what AWS' fakes cannot
// do, and why each check that does not run does not. docs/providers-aws.md
// is its report; a change in either (a new provider version, a new check
// in the kit) fails this test until both are brought in line.
func TestConformanceOfAWSProvider(t *testing.T) {
	t.Run("classic load balancer", testConformanceClassic)
	t.Run("network load balancer", testConformanceNLB)
}

func testConformanceClassic(t *testing.T) {
	fakes, provider, err := awsfakes.New("conformance")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []awsfakes.Instance{confRunning, confRunning2, confStopped, confTermed} {
		if err := fakes.AddInstance(in); err != nil {
			t.Fatal(err)
		}
	}
	if err := fakes.SetState(confStopped.ID, ec2types.InstanceStateNameStopped); err != nil {
		t.Fatal(err)
	}
	if err := fakes.SetState(confTermed.ID, ec2types.InstanceStateNameTerminated); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t)
	rep := conformance.RunT(rec, conformance.Config{
		Provider:  provider,
		Instances: []*corev1.Node{node(confRunning.ID, ""), node(confRunning2.ID, providerID(confRunning2)), node(confStopped.ID, providerID(confStopped))},
		// Gone: never existed (by name, and by a providerID), and
		// terminated (EC2 lists it for about an hour).
		Gone:      []*corev1.Node{node(neverExisted, ""), node("i-0c0000000000000b2", "aws:///us-west-2b/i-0c0000000000000b2"), node(confTermed.ID, providerID(confTermed))},
		FailAfter: fakes.FailAfter,
		Throttle:  fakes.Throttle,
	})
	checkOutcomes(t, rec, rep, map[string]expect{
		"Instances/ExistingInstancesExist":      {outcome: passed},
		"Instances/MetadataOfExistingInstances": {outcome: passed},
		"Instances/MetadataIsStable":            {outcome: passed},
		"Instances/GoneInstancesDoNotExist":     {outcome: passed},
		// AWS' InstanceMetadata describes a terminated instance (without
		// addresses) instead of answering InstanceNotFound.
		"Instances/GoneInstanceMetadataIsInstanceNotFound": {flagged, []string{"InstanceMetadata(" + confTermed.ID + ") of a gone machine succeeded", "NodeAddresses:[]"}},
		"Instances/ListerAgreesWithPerInstanceCalls":       {notRun, []string{"the provider does not implement cloud.InstanceLister"}},
		"LoadBalancer/NameIsStable":                        {outcome: passed},
		// AWS' fake ELB describes every name as an existing load balancer.
		"LoadBalancer/MissingIsReportedMissing":           {flagged, []string{"GetLoadBalancer of a Service that never had a load balancer says it exists"}},
		"LoadBalancer/DeletingMissingSucceeds":            securityGroupsPanic,
		"LoadBalancer/EnsureReturnsIngress":               securityGroupsPanic,
		"LoadBalancer/EnsureIsIdempotent":                 securityGroupsPanic,
		"LoadBalancer/EnsureConvergesAfterPartialFailure": securityGroupsPanic,
		"LoadBalancer/ListerAgreesWithPerServiceCalls":    {notRun, []string{"the provider does not implement cloud.LoadBalancerLister"}},
		"LoadBalancer/ServesDeclaredFamilies":             {notRun, []string{"does not implement cloud.IPFamilyLister"}},
		"LoadBalancer/EndpointTargets":                    {notRun, []string{"does not implement cloud.EndpointTargeter"}},
		"Modifications/EnsuredLoadBalancerIsReported":     {notRun, []string{"the provider does not implement cloud.ModificationLister"}},
		"Modifications/CreatedRouteIsReported":            {notRun, []string{"the provider does not implement cloud.ModificationLister"}},
		"LoadBalancer/DeleteIsIdempotent":                 securityGroupsPanic,
		"Ownership/ScopedToCluster":                       securityGroupsPanic,
		"Ownership/ScopedToClusterWithTheSameUID":         recommendedToo(securityGroupsPanic),
		// AWS' provider returns AWS' throttling error as it is, with no
		// RetryError (and, for a Node without a providerID, flattened to
		// text: see testThrottledErrors).
		"Errors/ThrottlingIsARetryError": {flagged, []string{"has no RetryError in its chain", "RequestLimitExceeded"}},
		"Routes/CreatedRouteIsListed":    routesPanic,
		"Routes/DeletedRouteIsNotListed": routesPanic,
		"Routes/CreateIsIdempotent":      recommendedToo(routesPanic),
		"Routes/DeleteIsIdempotent":      recommendedToo(routesPanic),
	})
	for _, gone := range []string{neverExisted, "i-0c0000000000000b2"} {
		if msg := rec.message("Instances/GoneInstanceMetadataIsInstanceNotFound"); strings.Contains(msg, gone) {
			t.Errorf("GoneInstanceMetadataIsInstanceNotFound flags %s, which never existed: %s", gone, msg)
		}
	}
	t.Run("throttled errors", func(t *testing.T) { testThrottledErrors(t, fakes, provider) })
}

// testConformanceNLB runs the load balancer and ownership checks with a
// Service that asks for a network load balancer (ELBv2). The other checks
// ran in the classic run: here they have no inputs, and the test asserts
// that each says so.
func testConformanceNLB(t *testing.T) {
	fakes, provider, err := awsfakes.New("conformance")
	if err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "conformance", Name: "conformance-nlb", UID: "conformance-uid-nlb",
			Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"},
		},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			Ports:                 []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}},
			SessionAffinity:       corev1.ServiceAffinityNone,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
		},
	}
	rec := newRecorder(t)
	rep := conformance.RunT(rec, conformance.Config{Provider: provider, Service: svc, FailAfter: fakes.FailAfter})
	noInstances := expect{notRun, []string{"Config.Instances is empty"}}
	noGone := expect{notRun, []string{"Config.Gone is empty"}}
	noRoute := expect{notRun, []string{"Config.Route is nil and Config.Instances is empty"}}
	checkOutcomes(t, rec, rep, map[string]expect{
		"Instances/ExistingInstancesExist":                 noInstances,
		"Instances/MetadataOfExistingInstances":            noInstances,
		"Instances/MetadataIsStable":                       noInstances,
		"Instances/GoneInstancesDoNotExist":                noGone,
		"Instances/GoneInstanceMetadataIsInstanceNotFound": noGone,
		"Instances/ListerAgreesWithPerInstanceCalls":       {notRun, []string{"the provider does not implement cloud.InstanceLister"}},
		"LoadBalancer/NameIsStable":                        {outcome: passed},
		"LoadBalancer/MissingIsReportedMissing":            nlbNotFound,
		"LoadBalancer/DeletingMissingSucceeds":             nlbNotFound,
		"LoadBalancer/EnsureReturnsIngress":                nlbNotFound,
		"LoadBalancer/EnsureIsIdempotent":                  nlbNotFound,
		"LoadBalancer/EnsureConvergesAfterPartialFailure":  nlbNotFound,
		"LoadBalancer/ListerAgreesWithPerServiceCalls":     {notRun, []string{"the provider does not implement cloud.LoadBalancerLister"}},
		"LoadBalancer/ServesDeclaredFamilies":              {notRun, []string{"does not implement cloud.IPFamilyLister"}},
		"LoadBalancer/EndpointTargets":                     {notRun, []string{"does not implement cloud.EndpointTargeter"}},
		"Modifications/EnsuredLoadBalancerIsReported":      {notRun, []string{"the provider does not implement cloud.ModificationLister"}},
		"Modifications/CreatedRouteIsReported":             {notRun, []string{"the provider does not implement cloud.ModificationLister"}},
		"LoadBalancer/DeleteIsIdempotent":                  nlbNotFound,
		"Ownership/ScopedToCluster":                        nlbNotFound,
		"Ownership/ScopedToClusterWithTheSameUID":          recommendedToo(nlbNotFound),
		"Errors/ThrottlingIsARetryError":                   {notRun, []string{"Config.Throttle is nil"}},
		"Routes/CreatedRouteIsListed":                      noRoute,
		"Routes/DeletedRouteIsNotListed":                   noRoute,
		"Routes/CreateIsIdempotent":                        noRoute,
		"Routes/DeleteIsIdempotent":                        noRoute,
	})
}

// testThrottledErrors looks at the throttled error ThrottlingIsARetryError
// flags, along both of the provider's paths: for a Node with a providerID
// AWS' error stays in the chain (%w), so a caller can tell a throttle by
// its code; for a Node without one (a Node being initialized) InstanceID
// formats it with %q, and only its text is left.
func testThrottledErrors(t *testing.T, fakes *awsfakes.Fakes, provider cloudprovider.InstancesV2) {
	undo := fakes.Throttle()
	defer undo()
	for _, c := range []struct {
		node      *corev1.Node
		keepsCode bool
	}{
		{node(confRunning2.ID, providerID(confRunning2)), true},
		{node(confRunning.ID, ""), false},
	} {
		_, err := provider.InstanceMetadata(context.Background(), c.node)
		if err == nil {
			t.Fatalf("InstanceMetadata(%s) succeeded while EC2 throttles", c.node.Name)
		}
		if _, ok := cloud.RetryAfter(err); ok {
			t.Errorf("InstanceMetadata(%s) while throttled carries a RetryError: %v", c.node.Name, err)
		}
		var apiErr smithy.APIError
		keeps := errors.As(err, &apiErr) && apiErr.ErrorCode() == "RequestLimitExceeded"
		if keeps != c.keepsCode || !strings.Contains(err.Error(), "RequestLimitExceeded") {
			t.Errorf("InstanceMetadata(%s, providerID %q) while throttled: %v; AWS' error code in the chain: %v, want %v",
				c.node.Name, c.node.Spec.ProviderID, err, keeps, c.keepsCode)
		}
	}
}

// checkOutcomes compares each check's outcome with want, which must name
// every check the kit has (it reports each as run or not run).
func checkOutcomes(t *testing.T, rec *recorder, rep conformance.Report, want map[string]expect) {
	t.Helper()
	all := append(slices.Clone(rep.Ran), slices.Collect(maps.Keys(rep.NotRun))...)
	slices.Sort(all)
	if wantAll := slices.Sorted(maps.Keys(want)); !slices.Equal(all, wantAll) {
		t.Errorf("the kit reported checks %v, want %v: a check was added or left out; update this test and docs/providers-aws.md", all, wantAll)
	}
	for _, check := range slices.Sorted(maps.Keys(want)) {
		w := want[check]
		got, msg := passed, ""
		switch reason, skipped := rep.NotRun[check]; {
		case skipped:
			got, msg = notRun, reason
		case rep.Recommended[check] != "":
			got, msg = recommended, rep.Recommended[check]
		case slices.Contains(rec.flagged(), check):
			got, msg = flagged, rec.message(check)
		}
		if got != w.outcome {
			t.Errorf("%s: %s, want %s; message: %s", check, got, w.outcome, msg)
			continue
		}
		for _, s := range w.says {
			if !strings.Contains(msg, s) {
				t.Errorf("%s (%s) says %q, want it to say %q", check, got, msg, s)
			}
		}
	}
}

func node(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func providerID(in awsfakes.Instance) string { return "aws:///" + in.Zone + "/" + in.ID }
