package node

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// updateOnlyRole counts what a role granting nodes get, list, watch and
// update, but neither patch nor nodes/status (kube-vip's published role),
// lets through and refuses.
type updateOnlyRole struct {
	patches, updates, statusWrites atomic.Int64
}

func forbidden(resource, name string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, name, errors.New("not granted by the role"))
}

// newUpdateOnlyController builds a controller over a fake API server that
// answers as under updateOnlyRole.
func newUpdateOnlyController(t *testing.T, fc *cloudfake.Cloud, nodes ...*corev1.Node) (*Controller, client.Client, *updateOnlyRole, *events.FakeRecorder) {
	t.Helper()
	role := &updateOnlyRole{}
	objs := make([]client.Object, 0, len(nodes))
	for _, n := range nodes {
		objs = append(objs, n)
	}
	cl := fake.NewClientBuilder().WithObjects(objs...).WithStatusSubresource(&corev1.Node{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
				role.patches.Add(1)
				return forbidden("nodes", obj.GetName())
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				role.updates.Add(1)
				return c.Update(ctx, obj, opts...)
			},
			SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
				role.statusWrites.Add(1)
				return forbidden("nodes/status", obj.GetName())
			},
			SubResourceUpdate: func(_ context.Context, _ client.Client, _ string, obj client.Object, _ ...client.SubResourceUpdateOption) error {
				role.statusWrites.Add(1)
				return forbidden("nodes/status", obj.GetName())
			},
		}).Build()
	rec := events.NewFakeRecorder(100)
	c, err := New(Deps{Deps: kit.Deps{Client: cl, Recorder: rec}, Instances: fc}, Config{Workers: 1, BaseBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c, cl, role, rec
}

// TestSyncUnderUpdateOnlyRole: upstream's node controller initializes a
// Node with an update and logs its refused status patch, so under a role
// granting nodes update but not patch it lifts the taint; so must Stratus,
// asking for a patch only once.
func TestSyncUnderUpdateOnlyRole(t *testing.T) {
	t.Parallel()
	fc := cloudfake.New(instance("n1", "10.0.0.1", "203.0.113.1"), instance("n2", "10.0.0.2", "203.0.113.2"))
	kubelets := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1"}}
	n1 := newNode("n1")
	n1.Status.Addresses = kubelets
	c, cl, role, rec := newUpdateOnlyController(t, fc, n1, newNode("n2"))
	ctx := context.Background()
	for _, name := range []string{"n1", "n2"} {
		if err := c.sync(ctx, name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
	}
	n := &corev1.Node{}
	if err := cl.Get(ctx, client.ObjectKey{Name: "n1"}, n); err != nil {
		t.Fatal(err)
	}
	if isUninitialized(n) || n.Spec.ProviderID != "fake://n1" || n.Labels[corev1.LabelTopologyZone] != "zone-a" {
		t.Errorf("node n1: taints %v, providerID %q, labels %v; want initialized", n.Spec.Taints, n.Spec.ProviderID, n.Labels)
	}
	if !slices.Equal(n.Status.Addresses, kubelets) {
		t.Errorf("node n1 addresses %v, want the kubelet's %v (the role grants no status write)", n.Status.Addresses, kubelets)
	}
	if p, u := role.patches.Load(), role.updates.Load(); p != 1 || u != 2 {
		t.Errorf("%d refused patches and %d updates, want 1 and 2 (the refusal is remembered)", p, u)
	}
	var synced int
	for len(rec.Events) > 0 {
		if e := <-rec.Events; e == "Normal Synced Node synced successfully" {
			synced++
		}
	}
	if synced != 2 {
		t.Errorf("%d Synced events, want 2", synced)
	}
}

// TestUpdateFallbackKeepsOptimisticConcurrency: the update is made at the
// resourceVersion the change was computed from, so a Node changed meanwhile
// is not overwritten: the write fails with a conflict, retried from a
// newer copy.
func TestUpdateFallbackKeepsOptimisticConcurrency(t *testing.T) {
	t.Parallel()
	c, cl, _, _ := newUpdateOnlyController(t, cloudfake.New(), newNode("n1"))
	ctx := context.Background()
	base := &corev1.Node{}
	if err := cl.Get(ctx, client.ObjectKey{Name: "n1"}, base); err != nil {
		t.Fatal(err)
	}
	meanwhile := base.DeepCopy()
	meanwhile.Spec.Taints = append(meanwhile.Spec.Taints, corev1.Taint{Key: "example.com/drain", Effect: corev1.TaintEffectNoSchedule})
	if err := cl.Update(ctx, meanwhile); err != nil {
		t.Fatal(err)
	}
	want := base.DeepCopy()
	want.Spec.Taints = nil
	err := c.writeNode(ctx, want, base, client.StrategicMergeFrom(base))
	if !apierrors.IsConflict(err) {
		t.Fatalf("write from a stale copy: %v, want a conflict", err)
	}
	got := &corev1.Node{}
	if err := cl.Get(ctx, client.ObjectKey{Name: "n1"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Taints) != 2 {
		t.Errorf("taints %v: the stale write overwrote the Node", got.Spec.Taints)
	}
}

// TestRefreshUnderUpdateOnlyRole: the refused address write does not keep
// the labels from being refreshed.
func TestRefreshUnderUpdateOnlyRole(t *testing.T) {
	t.Parallel()
	n, fc := initializedNode(t, "n1")
	n.ResourceVersion = ""
	editInstance(t, fc, "n1", func(in *cloud.Instance) {
		in.Metadata.InstanceType = "large"
		in.Metadata.NodeAddresses[0].Address = "10.0.0.9"
	})
	c, cl, role, _ := newUpdateOnlyController(t, fc, n)
	res, err := c.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := &corev1.Node{}
	if err := cl.Get(context.Background(), client.ObjectKey{Name: "n1"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[corev1.LabelInstanceTypeStable] != "large" || res.LabelWrites != 1 || res.Failed != 1 {
		t.Errorf("instance type %q, %+v; want large, one label write, the node counted failed for its addresses", got.Labels[corev1.LabelInstanceTypeStable], res)
	}
	if role.statusWrites.Load() != 1 || role.updates.Load() != 1 {
		t.Errorf("%d status writes, %d updates; want 1 refused and 1", role.statusWrites.Load(), role.updates.Load())
	}
}
