package cloudwrap

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// ErrNotLeader is what a fenced call fails with (errors.Is) when this
// replica cannot prove it still holds the leader lease.
var ErrNotLeader = errors.New("not provably the leader")

// Renewals tells when this replica last renewed its leader lease.
type Renewals interface {
	// LastRenewal is when the request of the last successful renewal (or
	// acquisition) was sent, read from this process's monotonic clock;
	// holding is false when this replica does not hold the lease.
	LastRenewal() (sent time.Time, holding bool)
}

// FenceOptions configure a Fence.
type FenceOptions struct {
	// Lease reports the renewals.
	Lease Renewals
	// LeaseDuration is --leader-elect-lease-duration: no other replica
	// takes the lease sooner than that after a renewal it saw, on its own
	// clock.
	LeaseDuration time.Duration
	// Margin is taken off the lease duration: the fence stays open for
	// LeaseDuration - Margin after a renewal's request was sent.
	Margin time.Duration
	// Clock reads the time; nil is the real (monotonic) clock.
	Clock clock.PassiveClock
	// GiveUp is called once, with the refusal, when the fence first
	// closes: the daemon gives up leadership there.
	GiveUp func(err error)
}

// Fence refuses the mutating calls of a replica that cannot prove, at the
// moment of the call, that it still holds the leader lease: its last
// renewal, timed from when its request was sent, is younger than the lease
// duration minus a margin. A replica paused past its lease (SIGSTOP, a VM
// stall, a long GC) would otherwise act on what it knew before the pause
// while another replica already leads. Once closed, the fence stays
// closed: the replica gives up leadership and must win it again as a new
// process. A nil *Fence is open: without leader election there is no one
// to fence against.
type Fence struct {
	lease         Renewals
	leaseDuration time.Duration
	window        time.Duration
	clock         clock.PassiveClock
	giveUp        func(err error)

	mu     sync.Mutex
	closed error
}

// NewFence returns a fence over o.Lease.
func NewFence(o FenceOptions) (*Fence, error) {
	if o.Lease == nil {
		return nil, errors.New("fence: no lease to read renewals from")
	}
	if o.Margin < 0 || o.Margin >= o.LeaseDuration {
		return nil, fmt.Errorf("fence: margin %s must be at least 0 and below the lease duration %s", o.Margin, o.LeaseDuration)
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	giveUp := o.GiveUp
	if giveUp == nil {
		giveUp = func(error) {}
	}
	return &Fence{lease: o.Lease, leaseDuration: o.LeaseDuration, window: o.LeaseDuration - o.Margin, clock: clk, giveUp: giveUp}, nil
}

// Check returns nil when the replica provably holds the lease now, and
// otherwise an error wrapping ErrNotLeader that says how old the last
// renewal is; the first such error closes the fence for good and gives up
// leadership. Callers check right before the mutating request goes out.
func (f *Fence) Check(ctx context.Context) error {
	if f == nil {
		return nil
	}
	sent, holding := f.lease.LastRenewal()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed != nil {
		return f.closed
	}
	age := f.clock.Since(sent)
	switch {
	case !holding || sent.IsZero():
		f.closed = fmt.Errorf("%w: this replica does not hold the lease", ErrNotLeader)
	case age >= f.window || age < 0:
		f.closed = fmt.Errorf("%w: last renewal %s ago, lease duration %s", ErrNotLeader, age.Round(time.Millisecond), f.leaseDuration)
	default:
		return nil
	}
	klog.FromContext(ctx).Error(f.closed, "Refusing to act and giving up leadership: another replica may lead by now",
		"fenceWindow", f.window)
	// Once, since closed is set: later refusals return the first one. The
	// daemon's giveUp only cancels a context, so it may run under the lock.
	f.giveUp(f.closed)
	return f.closed
}

// Closed tells whether the fence has refused a call.
func (f *Fence) Closed() bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed != nil
}

// Fenced is the instrumented cloud with its mutating calls (load balancer
// ensure, update and delete, route creation and deletion, the legacy
// AddSSHKeyToAllInstances) checked against a Fence right before the
// provider is called, after any pacing wait. Reads pass unchecked: a
// replica that lost the lease may still look. The pkg/cloud extensions
// (instance and load balancer lists, the planner, the annotation checker)
// only read.
type Fenced struct {
	*Cloud
	fence *Fence
}

// WithFence returns c fenced by f; c itself when f is nil (no leader
// election).
func WithFence(c *Cloud, f *Fence) cloud.Cloud {
	if f == nil {
		return c
	}
	return &Fenced{Cloud: c, fence: f}
}

// LoadBalancer is the instrumented LoadBalancer with its writes fenced.
func (c *Fenced) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	lb, ok := c.Cloud.LoadBalancer()
	if w, is := lb.(*loadBalancer); is {
		w.fence = c.fence
	}
	return lb, ok
}

// Routes is the instrumented Routes with its writes fenced.
func (c *Fenced) Routes() (cloudprovider.Routes, bool) {
	r, ok := c.Cloud.Routes()
	if w, is := r.(*routes); is {
		w.fence = c.fence
	}
	return r, ok
}

// Instances is the instrumented legacy Instances with
// AddSSHKeyToAllInstances fenced.
func (c *Fenced) Instances() (cloudprovider.Instances, bool) {
	in, ok := c.Cloud.Instances()
	if w, is := in.(*instances); is {
		w.fence = c.fence
	}
	return in, ok
}

// fenced is fn run only when f is open; the wrapper's mutating methods
// hand it to call, so that the check comes after the pacing wait, right
// before the provider is called.
func fenced[T any](f *Fence, fn func(context.Context) (T, error)) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		if err := f.Check(ctx); err != nil {
			var zero T
			return zero, err
		}
		return fn(ctx)
	}
}

// fenced0 is fenced for calls that return only an error.
func fenced0(f *Fence, fn func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := f.Check(ctx); err != nil {
			return err
		}
		return fn(ctx)
	}
}
