package service

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

func TestNodeTrackerVersion(t *testing.T) {
	tr := newNodeTracker()
	tr.upsert(node("a"))
	s1 := tr.snapshot()
	hb := node("a")
	hb.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	tr.upsert(hb)
	s2 := tr.snapshot()
	if s1.version != s2.version {
		t.Error("a heartbeat changed the node set's version")
	}
	if s2.nodes[0] != hb {
		t.Error("snapshot does not carry the latest node object")
	}
	tr.upsert(node("b", func(n *v1.Node) { n.Labels[v1.LabelNodeExcludeBalancers] = "true" }))
	s3 := tr.snapshot()
	if !sameNodes(s2, s3) {
		t.Error("an excluded node changed the eligible set")
	}
	tr.upsert(node("c"))
	s4 := tr.snapshot()
	if sameNodes(s3, s4) || !slices.Equal(names(s4.nodes), []string{"a", "c"}) {
		t.Errorf("nodes = %v", names(s4.nodes))
	}
	tr.remove("c")
	if s5 := tr.snapshot(); !sameNodes(s5, s3) {
		t.Errorf("after removal nodes = %v", names(s5.nodes))
	}
}

// A node pass queues only the Services whose applied node set differs.
func TestNodePassQueuesOnlyOutdated(t *testing.T) {
	h := newHarness(t, Config{}, lbService("ns", "a"), lbService("ns", "b"), node("n1"))
	h.mustSync("ns/a")
	h.mustSync("ns/b")
	h.c.nodes.upsert(node("n2"))
	h.mustSync("ns/a") // a catches up on its own (e.g. a concurrent Service change)
	h.c.nodeQueue.Add(nodeSyncKey)
	h.c.processNodeSync(context.Background())
	if n := h.c.queue.Len(); n != 1 {
		t.Fatalf("queued %d Services, want only b", n)
	}
	key, _ := h.c.queue.Get()
	if key != "ns/b" {
		t.Errorf("queued %q", key)
	}
	h.c.queue.Done(key)
}

// Node events within the delay coalesce into one pass.
func TestNodeEventsCoalesce(t *testing.T) {
	h := newHarness(t, Config{NodeSyncDelay: 200 * time.Millisecond})
	handler := h.c.nodeHandler()
	for i := range 20 {
		handler.OnAdd(node(string(rune('a'+i))), false)
	}
	if h.c.nodeQueue.Len() != 0 {
		t.Fatal("a pass ran before the delay")
	}
	time.Sleep(400 * time.Millisecond)
	if n := h.c.nodeQueue.Len(); n != 1 {
		t.Errorf("pending passes = %d, want 1", n)
	}
}

func TestProcessNextRetryAndBackoff(t *testing.T) {
	h := newHarness(t, Config{}, lbService("ns", "web"), node("n1"))
	ctx := context.Background()

	h.lb.failNext("EnsureLoadBalancer", cloudproviderapi.NewRetryError("provisioning", 50*time.Millisecond))
	h.c.queue.Add("ns/web")
	h.c.processNext(ctx)
	if h.c.queue.NumRequeues("ns/web") != 0 {
		t.Error("a RetryError counted as a failure")
	}
	time.Sleep(150 * time.Millisecond)
	if h.c.queue.Len() != 1 {
		t.Fatal("not requeued after the RetryError's delay")
	}

	h.lb.failNext("EnsureLoadBalancer", errors.New("boom"))
	h.c.processNext(ctx)
	if h.c.queue.NumRequeues("ns/web") != 1 {
		t.Error("an error did not start the backoff")
	}
	if h.c.queue.Len() != 0 {
		t.Error("an error was retried at once")
	}
}
