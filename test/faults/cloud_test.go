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
)

// deleteWhileProvisioning: Services deleted while their load balancer is
// still provisioning, and others deleted right after creation, before
// Stratus has even seen them. None may leave a load balancer behind or
// stay stuck on its finalizer.
func deleteWhileProvisioning(t *testing.T, w *world, leader *replica) *replica {
	ns := w.namespace("provisioning")
	w.setKnobs(api.KnobsPatch{LBProvisioningTime: duration(30 * time.Second)})
	slow := w.createServices(ns, "slow", 5)
	waitFor(w.ctx, t, "every load balancer to be provisioning", time.Minute, func(ctx context.Context) (bool, string) {
		lbs, err := w.lbsOf(ctx, ns)
		if err != nil {
			return false, err.Error()
		}
		for _, n := range slow {
			if lbs[n].Status != api.LBProvisioning {
				return false, fmt.Sprintf("%s: %q", n, lbs[n].Status)
			}
		}
		return true, ""
	})
	racing := w.createServices(ns, "racing", 3)
	w.deleteServices(ns, racing...)
	w.deleteServices(ns, slow...)
	deleted := time.Now()
	w.settle(t, "delete-while-provisioning", deleted)
	w.setKnobs(api.KnobsPatch{LBProvisioningTime: duration(baseProvisioning)})
	return leader
}

// drift: one load balancer deleted and another's backends changed in the
// cloud, behind Stratus' back (as an operator with the cloud console
// would). Both must be repaired within one check period, the deleted one
// with a new VIP published.
func drift(t *testing.T, w *world, leader *replica) *replica {
	ns := w.namespace("drift")
	names := w.createServices(ns, "drift", 2)
	waitFor(w.ctx, t, "the drift Services to converge", convergeTimeout, w.converged)
	lbs, err := w.lbsOf(w.ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	gone, changed := lbs[names[0]], lbs[names[1]]
	if _, err := w.cloud.DeleteLoadBalancer(w.ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	spec := changed.LoadBalancerSpec
	spec.Backends = spec.Backends[:1]
	if _, err := w.cloud.UpdateLoadBalancer(w.ctx, changed.ID, spec); err != nil {
		t.Fatal(err)
	}
	before := w.createdLBs(t)
	changedAt := time.Now()
	w.settle(t, "drift", changedAt)
	w.createdOnce(t, before, 1) // the deleted one, again
	after, err := w.lbsOf(w.ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if after[names[0]].ID == gone.ID {
		t.Errorf("load balancer %s deleted in the cloud is still listed", gone.ID)
	}
	if after[names[1]].ID != changed.ID {
		t.Errorf("load balancer %s with changed backends was replaced by %s; an update suffices", changed.ID, after[names[1]].ID)
	}
	return leader
}

// throttleStorm: the cloud's rate limit drops to 2 requests a second
// while ten Services are created. Once the storm has throttled Stratus
// (or Stratus has paced itself to converge under it), the limit is lifted.
func throttleStorm(t *testing.T, w *world, leader *replica) *replica {
	ns := w.namespace("ratelimit")
	before, err := w.answered(w.ctx, http.StatusTooManyRequests)
	if err != nil {
		t.Fatal(err)
	}
	w.setKnobs(api.KnobsPatch{RateLimit: ptr.To(2.0), RateBurst: ptr.To(2)})
	names := w.createServices(ns, "storm", 10)
	var throttled int64
	waitFor(w.ctx, t, "the storm to throttle Stratus", convergeTimeout, func(ctx context.Context) (bool, string) {
		n, err := w.answered(ctx, http.StatusTooManyRequests)
		if err != nil {
			return false, err.Error()
		}
		throttled = n - before
		if throttled >= 20 {
			return true, ""
		}
		// Only the Kubernetes side: any cloud call here would be throttled too.
		published := 0
		for _, name := range names {
			s, err := w.cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && len(s.Status.LoadBalancer.Ingress) > 0 {
				published++
			}
		}
		return published == len(names), fmt.Sprintf("%d throttled, %d of %d published", throttled, published, len(names))
	})
	t.Logf("the storm answered 429 to %d requests", throttled)
	w.setKnobs(api.KnobsPatch{RateLimit: ptr.To(0.0), RateBurst: ptr.To(api.DefaultKnobs().RateBurst)})
	w.settle(t, "429-storm", time.Now())
	return leader
}

// serverErrorOutage: the cloud answers 503 to every request while three
// Nodes are NotReady, one of them because its instance is gone, and two
// Services are created. No Node may be deleted during the outage (a cloud
// error is not proof that an instance is gone); once the cloud answers
// again, exactly the one whose instance is gone is deleted, and the
// Services converge without waiting out their backoff.
func serverErrorOutage(t *testing.T, w *world, leader *replica) *replica {
	ns := w.namespace("outage")
	nodes := []string{"outage-0", "outage-1", "outage-2"}
	w.addNodes(nodes...)
	waitFor(w.ctx, t, "the outage nodes to be initialized", convergeTimeout, w.converged)
	// Gone while its Node is still Ready, which the lifecycle controller
	// leaves alone: the outage starts before the Node turns NotReady.
	w.deleteInstance(nodes[0])
	before, err := w.answered(w.ctx, http.StatusServiceUnavailable, "ListInstances", "GetInstance")
	if err != nil {
		t.Fatal(err)
	}
	w.setKnobs(api.KnobsPatch{ErrorRate: ptr.To(1.0)})
	for _, n := range nodes {
		w.setReady(n, corev1.ConditionFalse)
	}
	w.createServices(ns, "outage", 2)
	// Five failed instance lookups: the lifecycle controller has looked at
	// the NotReady Nodes several times during the outage.
	waitFor(w.ctx, t, "the lifecycle controller to meet the outage", convergeTimeout, func(ctx context.Context) (bool, string) {
		n, err := w.answered(ctx, http.StatusServiceUnavailable, "ListInstances", "GetInstance")
		if err != nil {
			return false, err.Error()
		}
		return n-before >= 5, fmt.Sprintf("%d instance lookups failed", n-before)
	})
	for _, n := range nodes {
		if _, err := w.cs.CoreV1().Nodes().Get(w.ctx, n, metav1.GetOptions{}); err != nil {
			t.Errorf("node %s during the cloud outage: %v", n, err)
		}
	}
	w.setKnobs(api.KnobsPatch{ErrorRate: ptr.To(0.0)})
	w.settle(t, "5xx-outage", time.Now())
	return leader
}
