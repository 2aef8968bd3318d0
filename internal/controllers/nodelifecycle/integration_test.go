package nodelifecycle_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/controllers/node/nodetest"
	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const period = 300 * time.Millisecond

func TestIntegration(t *testing.T) {
	env := testbed.Start(t)
	// No retries of 429 in the provider's client: the test wants the
	// rate-limit answer to reach the controller at once.
	lc := nodetest.StartCloud(t, nil, 0)
	in, lister := lc.Instances(t)
	mgr := nodetest.NewManager(t, env.Config)
	reg := prometheus.NewRegistry()
	// periods counts the monitor periods the controller has completed.
	periods := func() uint64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == nodelifecycle.MetricPeriodDuration {
				return mf.GetMetric()[0].GetHistogram().GetSampleCount()
			}
		}
		return 0
	}
	c, err := nodelifecycle.New(nodelifecycle.Deps{
		Deps:      kit.Deps{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(nodelifecycle.ControllerName), Registerer: reg},
		Instances: in,
		Lister:    lister,
	}, nodelifecycle.Config{Period: period, CloudTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetupWithManager(t.Context(), mgr); err != nil {
		t.Fatal(err)
	}
	cs := env.Clientset

	// newNode creates an instance and its Node (NotReady unless ready),
	// owned by the test rather than kwok.
	newNode := func(ctx context.Context, t *testing.T, name string, ready corev1.ConditionStatus) api.Instance {
		t.Helper()
		insts, err := lc.CreateInstances(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		inst := insts[name]
		opts := localcluster.NodeOptions{ProviderID: lcprovider.ProviderID(inst.ID), Unmanaged: true}
		if _, err := localcluster.CreateNode(ctx, cs, name, opts); err != nil {
			t.Fatal(err)
		}
		if err := localcluster.SetReady(ctx, cs, name, ready); err != nil {
			t.Fatal(err)
		}
		return inst
	}

	t.Run("deletes node whose instance was deleted", func(t *testing.T) {
		ctx := testbed.Context(t, 2*time.Minute)
		inst := newNode(ctx, t, "gone", corev1.ConditionFalse)
		keep := newNode(ctx, t, "notready-alive", corev1.ConditionFalse)
		if _, err := lc.Admin.DeleteInstance(ctx, inst.ID); err != nil {
			t.Fatal(err)
		}
		waitGone(ctx, t, cs, "gone")
		// Three more complete periods, however long they take, leave the
		// live instance's Node alone.
		after := periods() + 3
		if err := wait.PollUntilContextCancel(ctx, period/3, true, func(context.Context) (bool, error) {
			return periods() >= after, nil
		}); err != nil {
			t.Fatalf("waiting for three more monitor periods: %v", err)
		}
		if _, err := cs.CoreV1().Nodes().Get(ctx, "notready-alive", metav1.GetOptions{}); err != nil {
			t.Errorf("node of live instance %s: %v", keep.ID, err)
		}
	})

	// The sandbox's repro: NotReady Nodes another system registered, with
	// providerIDs localcloud cannot parse. Its list has no such instance;
	// the per-node check fails, so every one is kept, with a warning.
	t.Run("list alone never deletes a node it cannot confirm", func(t *testing.T) {
		ctx := testbed.Context(t, 2*time.Minute)
		ids := map[string]string{
			"repro-nonsense": "nonsense://x",
			"repro-aws":      "aws:///eu-west-1a/i-0123456789abcdef0",
			"repro-garbage":  "localcloud://garbage",
		}
		for name, id := range ids {
			if _, err := localcluster.CreateNode(ctx, cs, name, localcluster.NodeOptions{ProviderID: id, Unmanaged: true}); err != nil {
				t.Fatal(err)
			}
			if err := localcluster.SetReady(ctx, cs, name, corev1.ConditionFalse); err != nil {
				t.Fatal(err)
			}
		}
		after := periods() + 3
		if err := wait.PollUntilContextCancel(ctx, period/3, true, func(context.Context) (bool, error) {
			return periods() >= after, nil
		}); err != nil {
			t.Fatalf("waiting for three more monitor periods: %v", err)
		}
		evs, err := cs.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for name, id := range ids {
			if _, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Errorf("node %s (providerID %s): %v", name, id, err)
			}
			if !slices.ContainsFunc(evs.Items, func(e eventsv1.Event) bool {
				return e.Regarding.Name == name && e.Reason == nodelifecycle.ReasonDeletionUnconfirmed && e.Type == corev1.EventTypeWarning
			}) {
				t.Errorf("no %s warning for node %s", nodelifecycle.ReasonDeletionUnconfirmed, name)
			}
		}
		// Leave the rest of the test a cluster without them.
		for name := range ids {
			if err := cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("shutdown taint added and removed", func(t *testing.T) {
		ctx := testbed.Context(t, 2*time.Minute)
		inst := newNode(ctx, t, "stopped", corev1.ConditionTrue)
		if _, err := lc.Admin.StopInstance(ctx, inst.ID); err != nil {
			t.Fatal(err)
		}
		if err := localcluster.SetReady(ctx, cs, "stopped", corev1.ConditionFalse); err != nil {
			t.Fatal(err)
		}
		waitTaint(ctx, t, cs, "stopped", true)
		if _, err := lc.Admin.StartInstance(ctx, inst.ID); err != nil {
			t.Fatal(err)
		}
		if err := localcluster.SetReady(ctx, cs, "stopped", corev1.ConditionTrue); err != nil {
			t.Fatal(err)
		}
		waitTaint(ctx, t, cs, "stopped", false)
	})

	t.Run("no deletion when the cloud answers 5xx or 429", func(t *testing.T) {
		ctx := testbed.Context(t, 2*time.Minute)
		inst := newNode(ctx, t, "flaky", corev1.ConditionTrue)
		if _, err := lc.Admin.DeleteInstance(ctx, inst.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := lc.Admin.UpdateConfig(ctx, api.KnobsPatch{ErrorRate: ptr.To(1.0)}); err != nil {
			t.Fatal(err)
		}
		if err := lc.Admin.ResetStats(ctx); err != nil {
			t.Fatal(err)
		}
		if err := localcluster.SetReady(ctx, cs, "flaky", corev1.ConditionFalse); err != nil {
			t.Fatal(err)
		}
		stillThere(ctx, t, cs, lc, "flaky", "503")

		// Throttled as well: the limiter answers 429 with a one-second
		// Retry-After, which the wrapper waits out, and the one request a
		// second it lets through still meets the injected 503, so no list
		// can succeed until both faults are lifted.
		if _, err := lc.Admin.UpdateConfig(ctx, api.KnobsPatch{RateLimit: ptr.To(1.0), RateBurst: ptr.To(1)}); err != nil {
			t.Fatal(err)
		}
		if err := lc.Admin.ResetStats(ctx); err != nil {
			t.Fatal(err)
		}
		stillThere(ctx, t, cs, lc, "flaky", "429")

		// Once the cloud answers, the node goes: the errors were all that
		// kept it.
		if _, err := lc.Admin.UpdateConfig(ctx, api.KnobsPatch{RateLimit: ptr.To(0.0), ErrorRate: ptr.To(0.0)}); err != nil {
			t.Fatal(err)
		}
		waitGone(ctx, t, cs, "flaky")
	})
}

// stillThere checks over several periods that the node is kept while the
// cloud answers the controller's lists with code.
func stillThere(ctx context.Context, t *testing.T, cs kubernetes.Interface, lc *nodetest.Cloud, name, code string) {
	t.Helper()
	// Five failed answers are several passes. A throttled cloud gets fewer:
	// the wrapper waits out each 429's Retry-After before the next call, so
	// two 429s already mean a pass after a throttled one.
	answers := int64(5)
	if code == "429" {
		answers = 2
	}
	err := wait.PollUntilContextTimeout(ctx, period, 2*time.Minute, false, func(ctx context.Context) (bool, error) {
		if _, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		st, err := lc.Admin.Stats(ctx)
		if err != nil {
			return false, err
		}
		return st.Operations["ListInstances"].ByCode[code] >= answers, nil
	})
	if err != nil {
		t.Fatalf("node %s while the cloud answers %s: %v", name, code, err)
	}
	evs, err := cs.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs.Items, func(e eventsv1.Event) bool {
		return e.Regarding.Name == name && e.Reason == nodelifecycle.ReasonCloudCheckFailed
	}) {
		t.Errorf("no %s event for %s", nodelifecycle.ReasonCloudCheckFailed, name)
	}
}

func waitGone(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("node %s not deleted: %v", name, err)
	}
}

// waitTaint waits for the shutdown taint to be present or gone; a taint
// present must have been written under the controller's field manager.
func waitTaint(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, want bool) {
	t.Helper()
	var n *corev1.Node
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if n, err = cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, nil
		}
		has := nodelifecycle.HasShutdownTaint(n)
		return has == want, nil
	})
	if err != nil {
		t.Fatalf("node %s shutdown taint present=%v not reached: %v", name, want, err)
	}
	if want && !testbed.WrittenBy(n, nodelifecycle.ControllerName, "") {
		t.Errorf("node %s: field managers %v, want %s, which wrote the taint", name, testbed.Managers(n), nodelifecycle.ControllerName)
	}
}
