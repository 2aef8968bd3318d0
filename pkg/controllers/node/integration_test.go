package node_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/controllers/node"
	"github.com/stratus-ccm/stratus/pkg/controllers/node/nodetest"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// addressOverride wraps the real localcloud provider and replaces the
// addresses of chosen instances: localcloud has no API to change an
// instance's addresses, so this stands in for a cloud-side change.
type addressOverride struct {
	in cloudprovider.InstancesV2
	l  cloud.InstanceLister

	mu    sync.Mutex
	addrs map[string][]v1.NodeAddress // by instance name
}

func (o *addressOverride) set(name string, addrs []v1.NodeAddress) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.addrs[name] = addrs
}

func (o *addressOverride) InstanceExists(ctx context.Context, n *v1.Node) (bool, error) {
	return o.in.InstanceExists(ctx, n)
}

func (o *addressOverride) InstanceShutdown(ctx context.Context, n *v1.Node) (bool, error) {
	return o.in.InstanceShutdown(ctx, n)
}

func (o *addressOverride) InstanceMetadata(ctx context.Context, n *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	return o.in.InstanceMetadata(ctx, n)
}

func (o *addressOverride) ListInstances(ctx context.Context) ([]cloud.Instance, error) {
	list, err := o.l.ListInstances(ctx)
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range list {
		if a, ok := o.addrs[list[i].Name]; ok {
			list[i].Metadata.NodeAddresses = a
		}
	}
	return list, err
}

func TestIntegration(t *testing.T) {
	env := testbed.Start(t)
	env.StartKwok(t)
	lc := nodetest.StartCloud(t, nil, 3)
	in, lister := lc.Instances(t)
	override := &addressOverride{in: in, l: lister, addrs: map[string][]v1.NodeAddress{}}
	mgr := nodetest.NewManager(t, env.Config)
	c, err := node.New(node.Deps{
		Client: mgr.GetClient(), Instances: override, Lister: override,
		Recorder: mgr.GetEventRecorder(node.Name), Registerer: prometheus.NewRegistry(),
	}, node.Config{Workers: 4, RefreshPeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	cs := env.Clientset

	t.Run("initialization", func(t *testing.T) {
		ctx := testbed.Context(t, 2*time.Minute)
		names := nodetest.Names("init", 3)
		insts, err := lc.CreateInstances(ctx, names...)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if _, err := testbed.CreateNode(ctx, cs, name, testbed.NodeOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range names {
			n := waitInitialized(ctx, t, cs, name)
			inst := insts[name]
			if n.Spec.ProviderID != "localcloud://"+inst.ID {
				t.Errorf("%s: providerID %q", name, n.Spec.ProviderID)
			}
			want := []v1.NodeAddress{
				{Type: v1.NodeInternalIP, Address: inst.Addresses.Internal},
				{Type: v1.NodeExternalIP, Address: inst.Addresses.External},
				{Type: v1.NodeHostName, Address: name},
			}
			if !slices.Equal(n.Status.Addresses, want) {
				t.Errorf("%s: addresses %v, want %v", name, n.Status.Addresses, want)
			}
			for k, v := range map[string]string{v1.LabelTopologyZone: "zone-a", v1.LabelTopologyRegion: "region-1",
				v1.LabelInstanceTypeStable: "small", v1.LabelFailureDomainBetaZone: "zone-a", v1.LabelInstanceType: "small"} {
				if n.Labels[k] != v {
					t.Errorf("%s: label %s=%q, want %q", name, k, n.Labels[k], v)
				}
			}
			waitEvent(ctx, t, cs, name, node.ReasonSynced)
		}
	})

	t.Run("provided node IP", func(t *testing.T) {
		ctx := testbed.Context(t, 2*time.Minute)
		insts, err := lc.CreateInstances(ctx, "pip-ok", "pip-bad")
		if err != nil {
			t.Fatal(err)
		}
		ext := insts["pip-ok"].Addresses.External
		if _, err := testbed.CreateNode(ctx, cs, "pip-ok", testbed.NodeOptions{ProvidedNodeIP: ext}); err != nil {
			t.Fatal(err)
		}
		if _, err := testbed.CreateNode(ctx, cs, "pip-bad", testbed.NodeOptions{ProvidedNodeIP: "192.0.2.99"}); err != nil {
			t.Fatal(err)
		}
		n := waitInitialized(ctx, t, cs, "pip-ok")
		if len(n.Status.Addresses) == 0 || n.Status.Addresses[0].Address != ext {
			t.Errorf("addresses %v: want the provided IP %s first", n.Status.Addresses, ext)
		}
		waitEvent(ctx, t, cs, "pip-bad", node.ReasonInvalidNodeIP)
		bad, err := cs.CoreV1().Nodes().Get(ctx, "pip-bad", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !hasTaint(bad) || len(bad.Status.Addresses) != 0 {
			t.Errorf("pip-bad: taints %v addresses %v; want tainted, no addresses", bad.Spec.Taints, bad.Status.Addresses)
		}
	})

	t.Run("missing instance stays tainted", func(t *testing.T) {
		ctx := testbed.Context(t, 2*time.Minute)
		if _, err := testbed.CreateNode(ctx, cs, "no-instance", testbed.NodeOptions{}); err != nil {
			t.Fatal(err)
		}
		waitEvent(ctx, t, cs, "no-instance", node.ReasonInstanceNotFound)
		n, err := cs.CoreV1().Nodes().Get(ctx, "no-instance", metav1.GetOptions{})
		if err != nil || !hasTaint(n) {
			t.Fatalf("no-instance: %v, taints %v; want it kept and tainted", err, n.Spec.Taints)
		}
	})

	t.Run("refresh after address change", func(t *testing.T) {
		ctx := testbed.Context(t, 2*time.Minute)
		if _, err := lc.CreateInstances(ctx, "refresh"); err != nil {
			t.Fatal(err)
		}
		if _, err := testbed.CreateNode(ctx, cs, "refresh", testbed.NodeOptions{}); err != nil {
			t.Fatal(err)
		}
		waitInitialized(ctx, t, cs, "refresh")
		changed := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.1.99.1"}, {Type: v1.NodeHostName, Address: "refresh"}}
		override.set("refresh", changed)
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			n, err := cs.CoreV1().Nodes().Get(ctx, "refresh", metav1.GetOptions{})
			return err == nil && slices.Equal(n.Status.Addresses, changed), nil
		})
		if err != nil {
			t.Fatalf("addresses not refreshed: %v", err)
		}
	})
}

func hasTaint(n *v1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider })
}

func waitInitialized(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) *v1.Node {
	t.Helper()
	var n *v1.Node
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		n, err = cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && !hasTaint(n) && len(n.Status.Addresses) > 0, nil
	})
	if err != nil {
		t.Fatalf("node %s not initialized: %v (last seen %+v)", name, err, n)
	}
	return n
}

// waitEvent waits for an event with reason about the node.
func waitEvent(ctx context.Context, t *testing.T, cs kubernetes.Interface, name, reason string) {
	t.Helper()
	var seen []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		evs, err := cs.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, e := range evs.Items {
			if e.Regarding.Name == name {
				seen = append(seen, fmt.Sprintf("%s/%s", e.Type, e.Reason))
				if e.Reason == reason {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event for node %s (events: %s)", reason, name, strings.Join(seen, ", "))
	}
}
