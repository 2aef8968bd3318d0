package nodelifecycle

import (
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/kit/kittest"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// A monitor period that failed during a cloud outage is run again as soon
// as the cloud answers, not a period later.
func TestPeriodRunsWhenCloudRecovers(t *testing.T) {
	rec := &kittest.Recovery{}
	c, err := New(Deps{Deps: kit.Deps{Client: fake.NewClientBuilder().Build(), Recovery: rec}, Instances: cloudfake.New()}, Config{Period: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[pass]())
	defer q.ShutDown()
	rec.Fire() // before start: nothing to queue, and no panic
	c.queue.Set(q)
	rec.Fire()
	if n := q.Len(); n != 1 {
		t.Fatalf("queue holds %d passes after recovery, want 1", n)
	}
}
