package node_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/node"
	"github.com/stratus-ccm/stratus/internal/controllers/node/nodetest"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

func TestIntegration(t *testing.T) {
	env := testbed.Start(t)
	env.StartKwok(t)
	lc := nodetest.StartCloud(t, nil, 3)
	in, lister := lc.Instances(t)
	mgr := nodetest.NewManager(t, env.Config)
	reg := prometheus.NewRegistry()
	c, err := node.New(node.Deps{
		Deps:      kit.Deps{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(node.ControllerName), Registerer: reg},
		Instances: in,
		Lister:    lister,
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
			if _, err := localcluster.CreateNode(ctx, cs, name, localcluster.NodeOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range names {
			n := waitInitialized(ctx, t, cs, name)
			inst := insts[name]
			if n.Spec.ProviderID != "localcloud://"+inst.ID {
				t.Errorf("%s: providerID %q", name, n.Spec.ProviderID)
			}
			want := []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: inst.Addresses.Internal},
				{Type: corev1.NodeExternalIP, Address: inst.Addresses.External},
				{Type: corev1.NodeHostName, Address: name},
			}
			if !slices.Equal(n.Status.Addresses, want) {
				t.Errorf("%s: addresses %v, want %v", name, n.Status.Addresses, want)
			}
			for k, v := range map[string]string{corev1.LabelTopologyZone: "zone-a", corev1.LabelTopologyRegion: "region-1",
				corev1.LabelInstanceTypeStable: "small", corev1.LabelFailureDomainBetaZone: "zone-a", corev1.LabelInstanceType: "small"} {
				if n.Labels[k] != v {
					t.Errorf("%s: label %s=%q, want %q", name, k, n.Labels[k], v)
				}
			}
			// Both writes (addresses, then providerID, labels and the
			// taint) carry the controller's name as their field manager.
			if !testbed.WrittenBy(n, node.ControllerName, "status") || !testbed.WrittenBy(n, node.ControllerName, "") {
				t.Errorf("%s: field managers %v, want %s for the Node and its status", name, testbed.Managers(n), node.ControllerName)
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
		if _, err := localcluster.CreateNode(ctx, cs, "pip-ok", localcluster.NodeOptions{ProvidedNodeIP: ext}); err != nil {
			t.Fatal(err)
		}
		if _, err := localcluster.CreateNode(ctx, cs, "pip-bad", localcluster.NodeOptions{ProvidedNodeIP: "192.0.2.99"}); err != nil {
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
		if _, err := localcluster.CreateNode(ctx, cs, "no-instance", localcluster.NodeOptions{}); err != nil {
			t.Fatal(err)
		}
		waitEvent(ctx, t, cs, "no-instance", node.ReasonInstanceNotFound)
		n, err := cs.CoreV1().Nodes().Get(ctx, "no-instance", metav1.GetOptions{})
		if err != nil || !hasTaint(n) {
			t.Fatalf("no-instance: %v, taints %v; want it kept and tainted", err, n.Spec.Taints)
		}
	})

	t.Run("refresh after a cloud-side address change", func(t *testing.T) {
		ctx := testbed.Context(t, 3*time.Minute)
		// Created without an external address: attaching one is the change.
		inst, err := lc.Admin.CreateInstance(ctx, api.CreateInstanceRequest{Name: "refresh", Zone: "zone-a", Region: "region-1", Type: "small"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := localcluster.CreateNode(ctx, cs, "refresh", localcluster.NodeOptions{}); err != nil {
			t.Fatal(err)
		}
		n := waitInitialized(ctx, t, cs, "refresh")
		internalOnly := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: inst.Addresses.Internal}, {Type: corev1.NodeHostName, Address: "refresh"}}
		if !slices.Equal(n.Status.Addresses, internalOnly) {
			t.Fatalf("addresses %v, want %v", n.Status.Addresses, internalOnly)
		}

		// Nothing changed in the cloud: whole refresh periods write nothing.
		before := refreshWrites(t, reg)
		waitRefreshes(ctx, t, reg, 2)
		if got := refreshWrites(t, reg); got != before {
			t.Fatalf("refreshes without a cloud-side change wrote %+v (before: %+v); want no writes", got, before)
		}

		attached, err := lc.Admin.AttachExternalAddress(ctx, inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		withExternal := []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: inst.Addresses.Internal},
			{Type: corev1.NodeExternalIP, Address: attached.Addresses.External},
			{Type: corev1.NodeHostName, Address: "refresh"},
		}
		before = expectOneStatusWrite(ctx, t, cs, reg, before, "refresh", withExternal)

		if _, err := lc.Admin.DetachExternalAddress(ctx, inst.ID); err != nil {
			t.Fatal(err)
		}
		expectOneStatusWrite(ctx, t, cs, reg, before, "refresh", internalOnly)
	})
}

// writeCounts are the refresh's API writes so far, by kind.
type writeCounts struct{ status, metadata float64 }

func refreshWrites(t *testing.T, reg prometheus.Gatherer) writeCounts {
	t.Helper()
	return writeCounts{
		status:   counterValue(t, reg, node.MetricRefreshWrites, "kind", "status"),
		metadata: counterValue(t, reg, node.MetricRefreshWrites, "kind", "metadata"),
	}
}

// waitRefreshes waits until n more refresh periods have succeeded, so that
// at least n-1 ran entirely after the call.
func waitRefreshes(ctx context.Context, t *testing.T, reg prometheus.Gatherer, n int) {
	t.Helper()
	want := counterValue(t, reg, node.MetricRefreshes, "result", "success") + float64(n)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return counterValue(t, reg, node.MetricRefreshes, "result", "success") >= want, nil
	})
	if err != nil {
		t.Fatalf("%d refresh periods did not succeed: %v", n, err)
	}
}

// expectOneStatusWrite waits for the node's addresses to become want, lets
// two more refresh periods pass, and checks that the change cost exactly
// one status write and no label write: no repeats once the cache has the
// new addresses. It returns the counts after the change.
func expectOneStatusWrite(ctx context.Context, t *testing.T, cs kubernetes.Interface, reg prometheus.Gatherer,
	before writeCounts, name string, want []corev1.NodeAddress) writeCounts {
	t.Helper()
	var got []corev1.NodeAddress
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = n.Status.Addresses
		return slices.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("addresses of %s not refreshed: %v (have %v, want %v)", name, err, got, want)
	}
	waitRefreshes(ctx, t, reg, 2)
	after := refreshWrites(t, reg)
	if after.status != before.status+1 || after.metadata != before.metadata {
		t.Fatalf("writes for one address change: %+v, before %+v; want exactly one status write", after, before)
	}
	return after
}

// counterValue reads one counter of reg; 0 when it has not been set yet.
func counterValue(t *testing.T, reg prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func hasTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider })
}

func waitInitialized(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	var n *corev1.Node
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
