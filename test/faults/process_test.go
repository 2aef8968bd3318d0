package faults

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// inFlightProvisioning keeps the load balancers of a burst of creations
// provisioning long enough for the test to strike while they are in
// flight, even on a loaded machine; the knob goes back to its base value
// right after the fault, which the load balancers already provisioning
// keep.
const inFlightProvisioning = 4 * time.Second

// inFlight waits until at least n of ns' Services have a load balancer in
// the cloud while at least one of names has none published yet: the
// moment to strike.
func (w *world) inFlight(t *testing.T, ns string, names []string, n int) {
	t.Helper()
	waitFor(w.ctx, t, fmt.Sprintf("%d load balancers of %s to be in the cloud", n, ns), convergeTimeout, func(ctx context.Context) (bool, string) {
		lbs, err := w.lbsOf(ctx, ns)
		if err != nil {
			return false, err.Error()
		}
		return len(lbs) >= n, fmt.Sprintf("%d load balancers", len(lbs))
	})
	svcs, err := w.cs.CoreV1().Services(ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	published := 0
	for _, s := range svcs.Items {
		if len(s.Status.LoadBalancer.Ingress) > 0 {
			published++
		}
	}
	if published == len(names) {
		t.Fatalf("all %d Services were published before the fault: nothing was in flight", published)
	}
	t.Logf("at the fault: %d of %d Services published", published, len(names))
}

// killDuringCreations: the leader is SIGKILLed while 20 Services are being
// created (their load balancers provisioning), then started again, as
// its Deployment would. No load balancer may be duplicated or leaked.
func killDuringCreations(t *testing.T, w *world, leader *replica) *replica {
	w.strikeDuringCreations(t, leader, "sigkill-during-creations", "sigkill", 20, 5, true)
	return leader
}

// strikeDuringCreations creates n Services in a new namespace ns and
// SIGKILLs leader once at least atLeast of their load balancers are in the
// cloud, to be restarted by its supervisor or not; then it waits for the
// invariants and checks that each Service got exactly one load balancer.
func (w *world) strikeDuringCreations(t *testing.T, leader *replica, scenario, ns string, n, atLeast int, restart bool) {
	t.Helper()
	ns = w.namespace(ns)
	w.setKnobs(api.KnobsPatch{LBProvisioningTime: duration(inFlightProvisioning)})
	before := w.createdLBs(t)
	names := w.createServices(ns, ns, n)
	w.inFlight(t, ns, names, atLeast)
	leader.kill(restart)
	killed := time.Now()
	w.setKnobs(api.KnobsPatch{LBProvisioningTime: duration(baseProvisioning)})
	w.settle(t, scenario, killed)
	w.createdOnce(t, before, n)
}

// restartControlPlane kills one control plane process while Stratus runs,
// changes the world while it is down (an instance of a NotReady Node is
// deleted in the cloud), starts it again on the same port and data, and
// creates Services once it is back: Stratus' watches must resume (it may
// have lost its lease and restarted meanwhile).
func restartControlPlane(t *testing.T, w *world, leader *replica, c localcluster.Component) *replica {
	ns := w.namespace(string(c))
	node := string(c) + "-node"
	w.addNodes(node)
	waitFor(w.ctx, t, node+" to be initialized", convergeTimeout, w.converged)
	w.setReady(node, corev1.ConditionFalse)
	if err := w.plane.Kill(c); err != nil {
		t.Fatal(err)
	}
	w.deleteInstance(node)
	if err := w.plane.Restart(w.ctx, c); err != nil {
		t.Fatalf("restart %s: %v", c, err)
	}
	back := time.Now()
	before := w.createdLBs(t)
	w.createServices(ns, "after", 3)
	w.settle(t, string(c)+"-restart", back)
	w.createdOnce(t, before, 3)
	return leader
}

func restartAPIServer(t *testing.T, w *world, leader *replica) *replica {
	return restartControlPlane(t, w, leader, localcluster.APIServer)
}

func restartEtcd(t *testing.T, w *world, leader *replica) *replica {
	return restartControlPlane(t, w, leader, localcluster.Etcd)
}

// failover: a standby replica waits for the lease; the leader is SIGKILLed
// in the middle of ten creations and stays down. The standby takes over
// without a restart of its own and finishes the work without duplicating
// a load balancer.
func failover(t *testing.T, w *world, leader *replica) *replica {
	standby := w.startReplica("b")
	waitFor(w.ctx, t, "the standby to be ready", time.Minute, standby.ready)
	holder := w.leaseHolder(t)
	w.strikeDuringCreations(t, leader, "leader-sigkill-standby", "failover", 10, 3, false)
	if h := w.leaseHolder(t); h == holder || h == "" {
		t.Errorf("lease holder after the failover: %q (before: %q)", h, holder)
	}
	if n := standby.startCount(); n != 1 {
		t.Errorf("the standby was started %d times: it did not take over as it was", n)
	}
	return standby
}

// createdLBs is how many load balancers the cloud has created so far.
func (w *world) createdLBs(t *testing.T) int64 {
	t.Helper()
	n, err := w.answered(w.ctx, http.StatusCreated, "CreateLoadBalancer")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// createdOnce checks that the cloud created exactly n load balancers since
// before: a duplicate created across the fault and deleted again since
// would pass the invariants, not this.
func (w *world) createdOnce(t *testing.T, before int64, n int) {
	t.Helper()
	if got := w.createdLBs(t) - before; got != int64(n) {
		t.Errorf("the cloud created %d load balancers for %d Services", got, n)
	}
}

func (w *world) leaseHolder(t *testing.T) string {
	t.Helper()
	l, err := w.cs.CoordinationV1().Leases("kube-system").Get(w.ctx, "cloud-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}
