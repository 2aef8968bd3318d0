package main_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"

	"example.com/fake-provider/provider"
)

// TestDaemonWithUpstreamFakeProvider builds this module's binary and runs
// it against a real kube-apiserver: a Node registered as an external-cloud
// kubelet registers it gets initialized from the fake cloud, and a
// Service of type LoadBalancer gets the fake's ingress IP.
func TestDaemonWithUpstreamFakeProvider(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fake-ccm")
	if out, err := exec.Command("go", "build", "-race", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the example's binary: %v\n%s", err, out)
	}
	env := testbed.Start(t)
	ctx := testbed.Context(t, 2*time.Minute)
	cs := env.Clientset

	// No --cloud-provider: main defaults it to the example's provider.
	testbed.StartProcess(t, filepath.Join(t.TempDir(), "fake-ccm.log"), bin,
		"--kubeconfig="+env.Kubeconfig,
		"--cluster-name=example",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(testbed.FreePort(t)),
		// Upstream's fake writes its load balancer map without a lock.
		"--concurrent-service-syncs=1",
		"--v=2",
	)

	if _, err := localcluster.CreateNode(ctx, cs, "worker-1", localcluster.NodeOptions{Unmanaged: true}); err != nil {
		t.Fatal(err)
	}
	if err := localcluster.SetReady(ctx, cs, "worker-1", corev1.ConditionTrue); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var node *corev1.Node
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		node, err = cs.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == cloudproviderapi.TaintExternalCloudProvider
		}), nil
	})
	if err != nil {
		t.Fatalf("node worker-1 not initialized: %v; last seen: %+v", err, node.Spec)
	}
	if got, want := node.Spec.ProviderID, provider.Name+"://worker-1"; got != want {
		t.Errorf("providerID = %q, want %q", got, want)
	}
	for label, want := range map[string]string{
		corev1.LabelInstanceTypeStable: provider.InstanceType,
		corev1.LabelTopologyZone:       provider.Zone,
		corev1.LabelTopologyRegion:     provider.Region,
	} {
		if got := node.Labels[label]; got != want {
			t.Errorf("label %s = %q, want %q", label, got, want)
		}
	}
	if !slices.Contains(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: provider.NodeIP}) {
		t.Errorf("addresses = %v, want InternalIP %s", node.Status.Addresses, provider.NodeIP)
	}

	var got *corev1.Service
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(got.Status.LoadBalancer.Ingress) > 0, nil
	})
	if err != nil {
		t.Fatalf("service web got no load balancer ingress: %v; status %+v", err, got.Status)
	}
	if ip := got.Status.LoadBalancer.Ingress[0].IP; ip != provider.ExternalIP {
		t.Errorf("ingress IP = %q, want the fake's %s", ip, provider.ExternalIP)
	}
	if !slices.Contains(got.Finalizers, "service.kubernetes.io/load-balancer-cleanup") {
		t.Errorf("finalizers = %v, want the load-balancer cleanup finalizer", got.Finalizers)
	}
}
