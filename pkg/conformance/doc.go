// Package conformance checks a cloud provider against the contract
// Stratus' controllers rely on, from the provider author's own tests:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Config{
//			Provider:  myProvider,             // against a real or test account
//			Instances: []*v1.Node{runningNode}, // machines that exist
//			Gone:      []*v1.Node{deletedNode}, // machines that do not
//		})
//	}
//
// Each check is a subtest named after the behaviour (for example
// LoadBalancer/EnsureIsIdempotent) and, when it fails, says what Stratus
// does wrong with a provider that behaves so. A check whose inputs the
// Config does not give (no Gone instances, no fault injection, a provider
// without Routes) is not run; Run's Report lists those with the reason, so
// a test can insist on the checks it expects.
//
// A few checks are recommended rather than required: they test behaviour
// Stratus' controllers do not rely on (idempotent CreateRoute and
// DeleteRoute: the route controller lists before it writes). One that
// fails is logged and listed in Report.Recommended; Config.Strict makes it
// fail the test.
//
// The checks create and delete a few load balancers and one route, named
// after Config.ClusterName (the ownership checks also act as a second
// cluster, ClusterName-other), and leave nothing behind when they pass.
package conformance
