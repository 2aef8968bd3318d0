package node

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// initializedNode returns a Node as sync leaves it for inst.
func initializedNode(t *testing.T, name string) (*corev1.Node, *cloudfake.Cloud) {
	t.Helper()
	fc := cloudfake.New(instance(name, "10.0.0.1", "203.0.113.1"))
	h := newHarness(t, fc, true, newNode(name))
	if err := h.c.sync(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	return h.node(t, name), fc
}

func TestRefreshUnchangedNodesWritesNothing(t *testing.T) {
	t.Parallel()
	for _, list := range []bool{false, true} {
		t.Run(fmt.Sprintf("list=%v", list), func(t *testing.T) {
			fc := cloudfake.New()
			var nodes []*corev1.Node
			for i := range 20 {
				name := fmt.Sprintf("n%d", i)
				n, _ := initializedNode(t, name)
				n.ResourceVersion = ""
				nodes = append(nodes, n)
				fc.PutInstance(instance(name, "10.0.0.1", "203.0.113.1"))
			}
			h := newHarness(t, fc, list, nodes...)
			res, err := h.c.Refresh(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Nodes != 20 || h.writes.total() != 0 {
				t.Errorf("refreshed %d nodes with %d writes; want 20 nodes, 0 writes", res.Nodes, h.writes.total())
			}
			calls := fc.CallCount("ListInstances") + fc.CallCount("InstanceMetadata")
			if list && calls != 1 || !list && calls != 20 {
				t.Errorf("cloud calls = %d (list=%v)", calls, list)
			}
		})
	}
}

func TestRefreshWritesChangedAddresses(t *testing.T) {
	t.Parallel()
	n, fc := initializedNode(t, "n1")
	n.ResourceVersion = ""
	h := newHarness(t, fc, true, n)
	changed := instance("n1", "10.0.0.1", "198.51.100.7")
	fc.PutInstance(changed)

	res, err := h.c.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusWrites != 1 || res.LabelWrites != 0 || h.writes.total() != 1 {
		t.Errorf("result %+v, writes %d; want one status write", res, h.writes.total())
	}
	if got := h.node(t, "n1").Status.Addresses; !slices.Equal(got, changed.Metadata.NodeAddresses) {
		t.Errorf("addresses = %v", got)
	}
}

func TestRefreshWritesChangedLabelsOnly(t *testing.T) {
	t.Parallel()
	n, fc := initializedNode(t, "n1")
	n.ResourceVersion = ""
	n.Labels["example.com/pool"] = "mine"
	h := newHarness(t, fc, true, n)
	inst := instance("n1", "10.0.0.1", "203.0.113.1")
	inst.Metadata.InstanceType = "large"
	inst.Metadata.AdditionalLabels = map[string]string{"example.com/pool": "cloud", "example.com/new": "x"}
	fc.PutInstance(inst)

	res, err := h.c.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusWrites != 0 || res.LabelWrites != 1 {
		t.Errorf("result %+v; want one label write", res)
	}
	got := h.node(t, "n1").Labels
	if got[corev1.LabelInstanceTypeStable] != "large" || got[corev1.LabelInstanceType] != "large" {
		t.Errorf("instance type labels = %v", got)
	}
	if got["example.com/pool"] != "mine" || got["example.com/new"] != "x" {
		t.Errorf("additional labels = %v; want existing kept, new added", got)
	}
}

func TestRefreshSkipsUninitializedAndMissingNodes(t *testing.T) {
	t.Parallel()
	n, _ := initializedNode(t, "gone")
	n.ResourceVersion = ""
	fc := cloudfake.New()
	h := newHarness(t, fc, true, n, newNode("new"))
	res, err := h.c.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Nodes != 1 || res.Skipped != 1 || h.writes.total() != 0 {
		t.Errorf("result %+v, writes %d; want the one initialized node skipped", res, h.writes.total())
	}
}

func TestRefreshListErrorWritesNothing(t *testing.T) {
	t.Parallel()
	n, fc := initializedNode(t, "n1")
	n.ResourceVersion = ""
	h := newHarness(t, fc, true, n)
	fc.SetError("", fmt.Errorf("unavailable"))
	if _, err := h.c.Refresh(context.Background()); err == nil {
		t.Fatal("want the list error")
	}
	if h.writes.total() != 0 {
		t.Errorf("writes = %d", h.writes.total())
	}
}
