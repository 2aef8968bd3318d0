package awsfakes

import (
	"errors"
	"sync"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	awsv1 "k8s.io/cloud-provider-aws/pkg/providers/v1"
	"k8s.io/cloud-provider-aws/pkg/providers/v1/iface"
)

// Fakes is AWS' fakes as the provider sees them through this package's
// wrappers: the tests add instances, change their state and inject faults
// through it.
type Fakes struct {
	clusterID string

	// mu serializes every call into AWS' fakes, and guards what the
	// wrappers hold. The fakes are written for single-threaded unit tests:
	// FakeAWSServices.countCall increments a map without a lock on every
	// DescribeInstances, CreateTags and DescribeNetworkInterfaces, and
	// DescribeSubnets and DescribeRouteTables record their input in a
	// field. Stratus calls the provider from several workers at once (node
	// initialization, node lifecycle, the service workers) beside the
	// provider's own batching goroutines, so unserialized calls race (and
	// Go aborts on a concurrent map write). AWS' API takes concurrent
	// calls; one at a time is slower, not different.
	mu sync.Mutex

	fake  *awsv1.FakeAWSServices
	ec2   iface.EC2
	elb   awsv1.ELB
	elbv2 awsv1.ELBV2

	// instances are the tests' machines, in the order they were added,
	// and their states by ID.
	instances []Instance
	states    map[string]ec2types.InstanceStateName

	// throttled fails every call as AWS' API does when an account
	// exceeds its request rate.
	throttled bool
	// failAfter is how many more calls are answered before every later
	// one loses its answer; negative when disarmed.
	failAfter int
}

// ErrAnswerLost is in the chain of a call whose answer FailAfter lost.
var ErrAnswerLost = errors.New("connection reset by peer after the request was sent (answer lost, injected by awsfakes)")

// The service IDs AWS' SDK names its APIs by in a smithy.OperationError.
const (
	serviceEC2   = "EC2"
	serviceELB   = "Elastic Load Balancing"
	serviceELBv2 = "Elastic Load Balancing v2"
)

// throttleCode is the error code an AWS API answers a throttled request
// with.
func throttleCode(service string) string {
	if service == serviceEC2 {
		return "RequestLimitExceeded"
	}
	return "Throttling"
}

// Throttle makes every call fail as AWS' API fails a throttled request
// (error code RequestLimitExceeded for EC2, Throttling for ELB and
// ELBv2, inside the SDK's smithy.OperationError), until undo is called.
// The call does not reach the fake. AWS' SDK retries throttled requests
// itself before it returns such an error; AWS' fakes sit below the SDK,
// so the provider sees the error at once, as it would once the SDK's
// retries are spent.
func (f *Fakes) Throttle() (undo func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.throttled = true
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.throttled = false
	}
}

// FailAfter answers the next n calls as usual and then loses the answer
// of every later one (the fake does the work, the provider gets
// ErrAnswerLost, as after a timeout), until disarm is called. It is
// pkg/conformance's Config.FailAfter.
func (f *Fakes) FailAfter(n int) (disarm func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failAfter = n
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.failAfter = -1
	}
}

// call runs fn, one call into AWS' fakes, serialized with every other and
// with the faults armed applied. A panic in the fake ("Not implemented")
// propagates to the provider's caller, as it would without this wrapper,
// and leaves the lock released.
func call[R any](f *Fakes, service, op string, fn func() (R, error)) (R, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var zero R
	if f.throttled {
		return zero, &smithy.OperationError{ServiceID: service, OperationName: op, Err: &smithy.GenericAPIError{
			Code: throttleCode(service), Message: "Request limit exceeded.", Fault: smithy.FaultClient,
		}}
	}
	out, err := fn()
	switch {
	case f.failAfter == 0:
		return zero, &smithy.OperationError{ServiceID: service, OperationName: op, Err: ErrAnswerLost}
	case f.failAfter > 0:
		f.failAfter--
	}
	return out, err
}
