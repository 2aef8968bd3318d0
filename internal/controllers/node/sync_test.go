package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

func TestSyncInitializesNode(t *testing.T) {
	t.Parallel()
	for _, list := range []bool{false, true} {
		t.Run(fmt.Sprintf("list=%v", list), func(t *testing.T) {
			inst := instance("n1", "10.0.0.1", "203.0.113.1")
			inst.Metadata.AdditionalLabels = map[string]string{"example.com/pool": "blue"}
			h := newHarness(t, cloudfake.New(inst), list, newNode("n1"))

			if err := h.c.sync(context.Background(), "n1"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			n := h.node(t, "n1")
			if isUninitialized(n) {
				t.Errorf("taint still present: %v", n.Spec.Taints)
			}
			if n.Spec.ProviderID != "fake://n1" {
				t.Errorf("providerID = %q", n.Spec.ProviderID)
			}
			if !slices.Equal(n.Status.Addresses, inst.Metadata.NodeAddresses) {
				t.Errorf("addresses = %v, want %v", n.Status.Addresses, inst.Metadata.NodeAddresses)
			}
			for k, v := range map[string]string{
				corev1.LabelTopologyZone: "zone-a", corev1.LabelFailureDomainBetaZone: "zone-a",
				corev1.LabelTopologyRegion: "region-1", corev1.LabelFailureDomainBetaRegion: "region-1",
				corev1.LabelInstanceTypeStable: "small", corev1.LabelInstanceType: "small",
				"example.com/pool": "blue", "kubernetes.io/hostname": "n1",
			} {
				if n.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
				}
			}
			if got := h.writes.total(); got != 2 {
				t.Errorf("API writes = %d, want 2 (status, then spec+metadata)", got)
			}
			if calls := h.cloud.CallCount("InstanceMetadata") + h.cloud.CallCount("ListInstances"); calls != 1 {
				t.Errorf("cloud calls = %d, want 1", calls)
			}
			wantEvent(t, h.events(), "Normal Synced")
		})
	}
}

func TestSyncKeepsExistingProviderIDAndLabels(t *testing.T) {
	t.Parallel()
	inst := instance("n1", "10.0.0.1", "203.0.113.1")
	inst.Metadata.AdditionalLabels = map[string]string{
		"example.com/pool":             "blue",
		"team":                         "cloud",
		"node.kubernetes.io/exclude":   "true",
		"k8s.io/anything":              "x",
		"sub.kubernetes.io/not-either": "x",
	}
	n := newNode("n1")
	n.Spec.ProviderID = "fake://n1"
	n.Labels["example.com/pool"] = "red"
	h := newHarness(t, cloudfake.New(inst), true, n)

	if err := h.c.sync(context.Background(), "n1"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	got := h.node(t, "n1")
	if got.Labels["example.com/pool"] != "red" {
		t.Errorf("existing label overwritten: %q", got.Labels["example.com/pool"])
	}
	if got.Labels["team"] != "cloud" {
		t.Errorf("additional label missing: %v", got.Labels)
	}
	for _, k := range []string{"node.kubernetes.io/exclude", "k8s.io/anything", "sub.kubernetes.io/not-either"} {
		if _, ok := got.Labels[k]; ok {
			t.Errorf("label %s under a Kubernetes namespace was set", k)
		}
	}
}

func TestSyncKeepsOtherTaints(t *testing.T) {
	t.Parallel()
	n := newNode("n1")
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule})
	h := newHarness(t, cloudfake.New(instance("n1", "10.0.0.1", "203.0.113.1")), true, n)
	if err := h.c.sync(context.Background(), "n1"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	got := h.node(t, "n1").Spec.Taints
	if len(got) != 1 || got[0].Key != "dedicated" {
		t.Errorf("taints = %v, want only dedicated", got)
	}
}

func TestSyncProvidedNodeIP(t *testing.T) {
	t.Parallel()
	inst := instance("n1", "10.0.0.1", "203.0.113.1")
	inst.Metadata.NodeAddresses = append([]corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.9"}}, inst.Metadata.NodeAddresses...)
	inst.Metadata.NodeAddresses = append(inst.Metadata.NodeAddresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::1"})
	n := newNode("n1")
	n.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: "10.0.0.1,fd00::1"}
	h := newHarness(t, cloudfake.New(inst), true, n)

	if err := h.c.sync(context.Background(), "n1"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	want := []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.0.0.1"},
		{Type: corev1.NodeInternalIP, Address: "fd00::1"},
		{Type: corev1.NodeExternalIP, Address: "203.0.113.1"},
		{Type: corev1.NodeHostName, Address: "n1"},
	}
	if got := h.node(t, "n1").Status.Addresses; !slices.Equal(got, want) {
		t.Errorf("addresses = %v, want %v", got, want)
	}
}

// A Node must stay tainted, with a Warning event naming why, with no
// write, and the sync must fail so that the Node is retried with backoff.
func TestSyncFailuresLeaveNodeTainted(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		list   bool
		setup  func(t *testing.T, fc *cloudfake.Cloud, n *corev1.Node)
		reason string
	}{
		{"provider error", false, func(_ *testing.T, fc *cloudfake.Cloud, _ *corev1.Node) { fc.SetError("", errors.New("boom")) }, ReasonInstanceMetadataErr},
		{"list error", true, func(_ *testing.T, fc *cloudfake.Cloud, _ *corev1.Node) { fc.SetError("", errors.New("boom")) }, ReasonInstanceMetadataErr},
		{"instance not found", false, func(_ *testing.T, _ *cloudfake.Cloud, n *corev1.Node) { n.Name = "other" }, ReasonInstanceNotFound},
		{"instance missing from list", true, func(_ *testing.T, _ *cloudfake.Cloud, n *corev1.Node) { n.Name = "other" }, ReasonInstanceNotFound},
		{"nil metadata", false, func(_ *testing.T, fc *cloudfake.Cloud, _ *corev1.Node) { fc.NilMetadata = true }, ReasonNilMetadata},
		{"empty providerID", true, func(t *testing.T, fc *cloudfake.Cloud, _ *corev1.Node) {
			editInstance(t, fc, "n1", func(in *cloud.Instance) { in.ProviderID, in.Metadata.ProviderID = "", "" })
		}, ReasonInvalidProviderID},
		{"malformed providerID", false, func(t *testing.T, fc *cloudfake.Cloud, _ *corev1.Node) {
			editInstance(t, fc, "n1", func(in *cloud.Instance) { in.Metadata.ProviderID = "i-123" })
		}, ReasonInvalidProviderID},
		{"no addresses", true, func(t *testing.T, fc *cloudfake.Cloud, _ *corev1.Node) {
			editInstance(t, fc, "n1", func(in *cloud.Instance) { in.Metadata.NodeAddresses = nil })
		}, ReasonNoAddresses},
		{"provided IP not in cloud", true, func(_ *testing.T, _ *cloudfake.Cloud, n *corev1.Node) {
			n.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: "10.9.9.9"}
		}, ReasonInvalidNodeIP},
		{"provided IP malformed", true, func(_ *testing.T, _ *cloudfake.Cloud, n *corev1.Node) {
			n.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: "10.0.0.1,10.0.0.2"}
		}, ReasonInvalidNodeIP},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc := cloudfake.New(instance("n1", "10.0.0.1", "203.0.113.1"))
			n := newNode("n1")
			tc.setup(t, fc, n)
			h := newHarness(t, fc, tc.list, n)

			err := h.c.sync(context.Background(), n.Name)
			if err == nil {
				t.Fatal("sync succeeded; want an error so the node is retried")
			}
			if !isUninitialized(h.node(t, n.Name)) {
				t.Error("node lost its uninitialized taint")
			}
			if w := h.writes.total(); w != 0 {
				t.Errorf("API writes = %d, want 0", w)
			}
			wantEvent(t, h.events(), "Warning "+tc.reason)
		})
	}
}

func TestSyncAPIErrorIsRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cloudfake.New(instance("n1", "10.0.0.1", "203.0.113.1")), true, newNode("n1"))
	h.writes.failSpec = apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("stale"))
	err := h.c.sync(context.Background(), "n1")
	if !apierrors.IsConflict(err) {
		t.Fatalf("sync error = %v, want the conflict", err)
	}
	wantEvent(t, h.events(), "Warning "+ReasonUpdateFailed)
	// The addresses were written; the retry writes only the spec.
	h.writes.failSpec = nil
	if err := h.c.sync(context.Background(), "n1"); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if s := h.writes.status.Load(); s != 1 {
		t.Errorf("status writes = %d, want 1 across both attempts", s)
	}
	if isUninitialized(h.node(t, "n1")) {
		t.Error("node still tainted after the retry")
	}
}

func TestSyncHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	fc := cloudfake.New(instance("n1", "10.0.0.1", "203.0.113.1"))
	fc.SetError("", cloudproviderapi.NewRetryError("slow down", 7*time.Second))
	h := newHarness(t, fc, false, newNode("n1"))
	res, err := h.c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "n1"}})
	if err != nil || res.RequeueAfter != 7*time.Second {
		t.Fatalf("Reconcile = %+v, %v; want RequeueAfter 7s", res, err)
	}
	// The cloud's work in progress is no failure worth a warning.
	if ev := h.events(); len(ev) != 0 {
		t.Errorf("events after a RetryError = %v, want none", ev)
	}
}

func TestSyncFailureDoesNotAffectOtherNodes(t *testing.T) {
	t.Parallel()
	fc := cloudfake.New(instance("good", "10.0.0.1", "203.0.113.1"))
	h := newHarness(t, fc, true, newNode("good"), newNode("missing"))
	if err := h.c.sync(context.Background(), "missing"); !errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Fatalf("missing: err = %v, want InstanceNotFound", err)
	}
	if err := h.c.sync(context.Background(), "good"); err != nil {
		t.Fatalf("good: %v", err)
	}
	if isUninitialized(h.node(t, "good")) || !isUninitialized(h.node(t, "missing")) {
		t.Error("want good initialized and missing still tainted")
	}
}

func TestSyncRetryNeedsNewerList(t *testing.T) {
	t.Parallel()
	fc := cloudfake.New()
	h := newHarness(t, fc, true, newNode("late"))
	if err := h.c.sync(context.Background(), "late"); err == nil {
		t.Fatal("want InstanceNotFound before the instance exists")
	}
	// The machine appears; the retry must not be answered from the list
	// that did not contain it.
	fc.PutInstance(instance("late", "10.0.0.5", "203.0.113.5"))
	if err := h.c.sync(context.Background(), "late"); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if got := fc.CallCount("ListInstances"); got != 2 {
		t.Errorf("list calls = %d, want 2", got)
	}
}

func TestSyncIgnoresInitializedAndDeletedNodes(t *testing.T) {
	t.Parallel()
	n := newNode("done")
	n.Spec.Taints = nil
	fc := cloudfake.New(instance("done", "10.0.0.1", "203.0.113.1"))
	h := newHarness(t, fc, true, n)
	for _, name := range []string{"done", "gone"} {
		if err := h.c.sync(context.Background(), name); err != nil {
			t.Errorf("sync %s: %v", name, err)
		}
	}
	if h.writes.total() != 0 || fc.CallCount("ListInstances") != 0 {
		t.Errorf("writes %d, lists %d; want none", h.writes.total(), fc.CallCount("ListInstances"))
	}
}

var _ cloud.InstanceLister = (*cloudfake.Cloud)(nil)

func TestSyncDoesNotRepeatWritesOnStaleCache(t *testing.T) {
	t.Parallel()
	n := newNode("n1")
	h := newHarness(t, cloudfake.New(instance("n1", "10.0.0.1", "203.0.113.1")), true, n)
	stale := h.node(t, "n1")
	if err := h.c.sync(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	// The cache still shows the Node as it was before the writes.
	if err := h.client.Update(context.Background(), stale); err == nil {
		t.Fatal("stale update accepted; the fake client should refuse it")
	}
	if !h.c.predatesWrite(stale) {
		t.Fatal("a copy from before the writes is not recognised as stale")
	}
	fresh := h.node(t, "n1")
	if h.c.predatesWrite(fresh) {
		t.Fatal("the current Node is taken as stale")
	}
}
