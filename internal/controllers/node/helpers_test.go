package node

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// editInstance changes the cloud's instance of the node called name in
// place, failing t when it holds none: an edit that changed nothing would
// let a test pass for the wrong reason.
func editInstance(t *testing.T, fc *cloudfake.Cloud, name string, change func(*cloud.Instance)) {
	t.Helper()
	if !fc.EditInstance(name, change) {
		t.Fatalf("the cloud holds no instance called %s to edit", name)
	}
}

// instance returns a running instance for a node name, with an internal
// and an external address and zone, region and type set.
func instance(name, internal, external string) cloud.Instance {
	id := "fake://" + name
	return cloud.Instance{
		ProviderID: id, Name: name,
		Metadata: cloudprovider.InstanceMetadata{
			ProviderID:   id,
			InstanceType: "small",
			Zone:         "zone-a",
			Region:       "region-1",
			NodeAddresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: internal},
				{Type: corev1.NodeExternalIP, Address: external},
				{Type: corev1.NodeHostName, Address: name},
			},
		},
	}
}

// newNode returns a Node as a kubelet with --cloud-provider=external
// registers it.
func newNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		}},
	}
}

// writes counts the API writes the controller makes.
type writes struct {
	spec, status atomic.Int64
	failSpec     error
}

func (w *writes) total() int64 { return w.spec.Load() + w.status.Load() }

type harness struct {
	c        *Controller
	client   client.Client
	cloud    *cloudfake.Cloud
	recorder *events.FakeRecorder
	writes   *writes
}

// newHarness builds a controller over a fake client holding nodes; with
// list the cloud's ListInstances serves metadata.
func newHarness(t *testing.T, fc *cloudfake.Cloud, list bool, nodes ...*corev1.Node) *harness {
	t.Helper()
	w := &writes{}
	objs := make([]client.Object, 0, len(nodes))
	for _, n := range nodes {
		objs = append(objs, n)
	}
	cl := fake.NewClientBuilder().WithObjects(objs...).WithStatusSubresource(&corev1.Node{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				w.spec.Add(1)
				if w.failSpec != nil {
					return w.failSpec
				}
				return c.Patch(ctx, obj, p, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				w.spec.Add(1)
				return c.Update(ctx, obj, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				w.status.Add(1)
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		}).Build()
	rec := events.NewFakeRecorder(1000)
	deps := Deps{Deps: kit.Deps{Client: cl, Recorder: rec}, Instances: fc}
	if list {
		deps.Lister = fc
	}
	c, err := New(deps, Config{Workers: 4, ListInterval: time.Millisecond, BaseBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{c: c, client: cl, cloud: fc, recorder: rec, writes: w}
}

func (h *harness) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := h.client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// events drains the recorded events.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// wantEvent fails t unless an event starting with prefix was recorded.
func wantEvent(t *testing.T, evs []string, prefix string) {
	t.Helper()
	for _, e := range evs {
		if strings.HasPrefix(e, prefix) {
			return
		}
	}
	t.Errorf("no event %q among %q", prefix, evs)
}
