package faults

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// TestFaults runs every scenario against one world, in sequence (see the
// package comment). A scenario leaves its Services behind: later faults
// then hit a cluster with more load balancers to keep right, as a real
// one would.
func TestFaults(t *testing.T) {
	ctx := testbed.Context(t, 15*time.Minute)
	w := newWorld(t, ctx)
	started := time.Now()
	leader := w.startReplica("a")
	var names []string
	for i := range baseNodes {
		names = append(names, fmt.Sprintf("node-%d", i))
	}
	w.addNodes(names...)
	w.createServices(w.namespace("baseline"), "web", 2)
	w.settle(t, "cold-start", started)

	for _, s := range []struct {
		name string
		run  func(*testing.T, *world, *replica) *replica
	}{
		{"delete-while-provisioning", deleteWhileProvisioning},
		{"drift", drift},
		{"429-storm", throttleStorm},
		{"5xx-outage", serverErrorOutage},
		{"sigkill-during-creations", killDuringCreations},
		{"kube-apiserver-restart", restartAPIServer},
		{"etcd-restart", restartEtcd},
		{"leader-sigkill-standby", failover},
		{"leader-paused-standby", pausedLeader},
		// The safety scenarios (safety_test.go); two-clusters first, so
		// that every later fault also checks the other cluster's objects.
		{"two-clusters", twoClusters},
		{"hybrid", hybrid},
		{"short-list", shortList},
		{"mass-outage", massOutage},
		{"refused-objects", refusedObjects},
		{"cap-failover", capSurvivesFailover},
		{"teardown", teardownCluster},
	} {
		if !t.Run(s.name, func(t *testing.T) { leader = s.run(t, w, leader) }) {
			// The world is in an unknown state: later scenarios would only
			// report this failure again.
			return
		}
	}
}

// lbService is a LoadBalancer Service with one TCP port.
func lbService(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

// createServices creates n LoadBalancer Services prefix-0..n-1 in ns.
func (w *world) createServices(ns, prefix string, n int) []string {
	w.t.Helper()
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		if _, err := w.cs.CoreV1().Services(ns).Create(w.ctx, lbService(ns, names[i]), metav1.CreateOptions{}); err != nil {
			w.t.Fatal(err)
		}
	}
	return names
}

func (w *world) deleteServices(ns string, names ...string) {
	w.t.Helper()
	for _, n := range names {
		if err := w.cs.CoreV1().Services(ns).Delete(w.ctx, n, metav1.DeleteOptions{}); err != nil {
			w.t.Fatal(err)
		}
	}
}

// lbsOf returns the cluster's load balancers of ns' Services, by Service
// name. The test's client does not retry: under a fault, ok is false.
func (w *world) lbsOf(ctx context.Context, ns string) (map[string]api.LoadBalancer, error) {
	all, err := w.cloud.ListAllLoadBalancers(ctx, lcclient.ListOptions{Cluster: clusterName, Tags: map[string]string{api.TagServiceNamespace: ns}})
	if err != nil {
		return nil, err
	}
	out := map[string]api.LoadBalancer{}
	for _, lb := range all {
		out[lb.Tags[api.TagServiceName]] = lb
	}
	return out, nil
}

// answered returns how many requests the cloud answered with code, over
// the given operations (every operation when none is named).
func (w *world) answered(ctx context.Context, code int, ops ...string) (int64, error) {
	st, err := w.cloud.Stats(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for op, s := range st.Operations {
		if len(ops) == 0 || slices.Contains(ops, op) {
			n += s.ByCode[fmt.Sprint(code)]
		}
	}
	return n, nil
}

func duration(d time.Duration) *api.Duration { return ptr.To(api.Duration(d)) }
