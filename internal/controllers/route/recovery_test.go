package route

import (
	"errors"
	"net/netip"
	"testing"

	"k8s.io/client-go/util/workqueue"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/kit/kittest"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// After a cloud outage a pass runs at once, and the routes whose creation
// failed during it are not held back by the backoff the outage built up; a
// route the cloud refused on its own account keeps its backoff.
func TestPassRunsWhenCloudRecovers(t *testing.T) {
	t.Parallel()
	fr := cloudfake.New()
	fr.SetErrorFor("CreateRoute", "10.244.0.0/24", kittest.HTTPError(503))
	fr.SetErrorFor("CreateRoute", "10.244.1.0/24", errors.New("route table full for this destination"))
	f := newFixture(t, fr, Config{}, node("a", "lc://a", "10.244.0.0/24"), node("b", "lc://b", "10.244.1.0/24"))
	rec := &kittest.Recovery{}
	c, err := New(Deps{Deps: kit.Deps{Client: f.cl, Recovery: rec}, Routes: fr}, f.c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[pass]())
	defer q.ShutDown()
	c.queue.Set(q)
	if _, err := c.sync(f.ctx, pass{}); err != nil {
		t.Fatalf("sync: %v", err)
	}
	k := routeKey{cidr: netip.MustParsePrefix("10.244.0.0/24"), node: "a"}
	if c.backoff.ready(k, f.clk.Now()) {
		t.Fatal("the failed route is not backing off")
	}
	rec.Fire()
	if n := q.Len(); n != 1 {
		t.Fatalf("queue holds %d passes after recovery, want 1", n)
	}
	if !c.backoff.ready(k, f.clk.Now()) {
		t.Error("the failed route still backs off after the cloud recovered")
	}
	refused := routeKey{cidr: netip.MustParsePrefix("10.244.1.0/24"), node: "b"}
	if c.backoff.ready(refused, f.clk.Now()) {
		t.Error("the route the cloud refused lost its backoff at the recovery")
	}

	// Only refusals left: a recovery runs no pass.
	q.Get()
	q.Done(pass{})
	c.backoff.failed(k, f.clk.Now(), false)
	rec.Fire()
	if n := q.Len(); n != 0 {
		t.Errorf("queue holds %d passes after a recovery with no outage failure, want 0", n)
	}
}
