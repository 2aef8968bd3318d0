package main

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	awsv1 "k8s.io/cloud-provider-aws/pkg/providers/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/ccm"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"

	"example.com/aws-provider/internal/awsfakes"
)

// The daemon test's machines. Their Nodes are named by instance ID, as
// EKS (resource-based names) and kops name theirs, so that AWS' provider
// finds them by ID.
var (
	running = awsfakes.Instance{ID: "i-0a1b2c3d4e5f60001", Zone: "us-west-2a", Type: "m5.large", PrivateIP: "10.0.1.10", PublicIP: "203.0.113.10"}
	doomed  = awsfakes.Instance{ID: "i-0a1b2c3d4e5f60002", Zone: "us-west-2b", Type: "c5.xlarge", PrivateIP: "10.0.2.20"}
	stopped = awsfakes.Instance{ID: "i-0a1b2c3d4e5f60003", Zone: "us-west-2c", Type: "t3.medium", PrivateIP: "10.0.3.30"}
)

// TestStratusRunsAWSProvider runs Stratus in-process, built through
// pkg/ccm as this module's main builds it, with AWS' own provider over
// AWS' own fakes, against a real kube-apiserver: Nodes registered as
// external-cloud kubelets register them are initialized from the fake
// EC2 (providerID, addresses, zone, region, instance type and zone-id
// labels, taint removed); a terminated instance's NotReady Node is
// deleted, and a stopped instance's is tainted shut down.
func TestStratusRunsAWSProvider(t *testing.T) {
	env := testbed.Start(t)
	ctx := testbed.Context(t, 3*time.Minute)
	cs := env.Clientset

	fakes, provider, err := awsfakes.New("stratus-aws")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []awsfakes.Instance{running, doomed, stopped} {
		if err := fakes.AddInstance(in); err != nil {
			t.Fatal(err)
		}
	}
	runDaemon(t, ctx, env, provider)

	start := time.Now()
	for _, in := range []awsfakes.Instance{running, doomed, stopped} {
		if _, err := localcluster.CreateNode(ctx, cs, in.ID, localcluster.NodeOptions{Unmanaged: true}); err != nil {
			t.Fatal(err)
		}
		if err := localcluster.SetReady(ctx, cs, in.ID, corev1.ConditionTrue); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range []awsfakes.Instance{running, doomed, stopped} {
		checkInitialized(t, ctx, cs, in)
	}
	t.Logf("3 Nodes initialized through AWS' provider in %v", time.Since(start).Round(time.Millisecond))

	// The machines go away as EC2 reports it; their kubelets stop
	// posting, so the Nodes turn NotReady.
	if err := fakes.SetState(doomed.ID, ec2types.InstanceStateNameTerminated); err != nil {
		t.Fatal(err)
	}
	if err := fakes.SetState(stopped.ID, ec2types.InstanceStateNameStopped); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{doomed.ID, stopped.ID} {
		if err := localcluster.SetReady(ctx, cs, id, corev1.ConditionFalse); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Nodes().Get(ctx, doomed.ID, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("Node %s, whose instance is terminated, was not deleted: %v", doomed.ID, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, stopped.ID, metav1.GetOptions{})
		return err == nil && hasTaint(n, cloudproviderapi.TaintNodeShutdown), err
	})
	if err != nil {
		t.Fatalf("Node %s, whose instance is stopped, was not tainted %s: %v", stopped.ID, cloudproviderapi.TaintNodeShutdown, err)
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, running.ID, metav1.GetOptions{}); err != nil {
		t.Errorf("Node %s, whose instance runs: %v", running.ID, err)
	}
}

// initSignal is AWS' provider as it is, but for a signal once the daemon
// has called its Initialize. The daemon applies its process-wide settings
// (klog's configuration) as it starts; the test's own API calls wait for
// this signal, which comes after them, or they would race with them on
// klog's globals.
type initSignal struct {
	*awsv1.Cloud
	once        *sync.Once
	initialized chan struct{}
}

func (p initSignal) Initialize(builder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	p.Cloud.Initialize(builder, stop)
	p.once.Do(func() { close(p.initialized) })
}

// runDaemon runs the daemon command pkg/ccm builds, with this binary's
// configuration and provider as the "aws" provider, until the test ends,
// and returns once the daemon has initialized the provider. It runs in
// the test's process because AWS' fakes are Go values; the provider is
// the one AWS' registered factory would build, over the fakes instead of
// the SDK's clients.
func runDaemon(t *testing.T, ctx context.Context, env *testbed.Env, provider *awsv1.Cloud) {
	t.Helper()
	p := initSignal{Cloud: provider, once: &sync.Once{}, initialized: make(chan struct{})}
	cfg := config()
	cfg.Providers = []ccm.Provider{{Name: providerName, New: func(context.Context, ccm.Inputs) (cloudprovider.Interface, error) {
		return p, nil
	}}}
	// A registry of its own: the process-wide one would be shared with
	// any other daemon a test of this package starts.
	cfg.Metrics = prometheus.NewRegistry()
	cmd := ccm.NewCommand(cfg)
	cmd.SetArgs([]string{
		"--kubeconfig=" + env.Kubeconfig,
		"--cluster-name=stratus-aws",
		"--leader-elect=false",
		"--secure-port=0",
		// NotReady Nodes are checked against the cloud every second
		// rather than every 5, so the test takes seconds.
		"--node-monitor-period=1s",
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	select {
	case <-p.initialized:
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("the daemon exited before it initialized AWS' provider: %v", err)
	case <-ctx.Done():
		t.Fatal("the daemon did not initialize AWS' provider")
	}
}

// checkInitialized waits until in's Node has lost the uninitialized taint
// and checks what AWS' provider set from the fake EC2.
func checkInitialized(t *testing.T, ctx context.Context, cs kubernetes.Interface, in awsfakes.Instance) {
	t.Helper()
	var node *corev1.Node
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		node, err = cs.CoreV1().Nodes().Get(ctx, in.ID, metav1.GetOptions{})
		return err == nil && !hasTaint(node, cloudproviderapi.TaintExternalCloudProvider), err
	})
	if err != nil {
		t.Fatalf("Node %s not initialized: %v; last seen: spec=%+v labels=%v", in.ID, err, node.Spec, node.Labels)
	}
	if got, want := node.Spec.ProviderID, "aws:///"+in.Zone+"/"+in.ID; got != want {
		t.Errorf("Node %s: providerID = %q, want %q", in.ID, got, want)
	}
	for label, want := range map[string]string{
		corev1.LabelTopologyZone:       in.Zone,
		corev1.LabelTopologyRegion:     awsfakes.Region,
		corev1.LabelInstanceTypeStable: in.Type,
		// AWS' own label, from the fake's DescribeAvailabilityZones.
		"topology.k8s.aws/zone-id": map[string]string{"us-west-2a": "az1", "us-west-2b": "az2", "us-west-2c": "az3"}[in.Zone],
	} {
		if got := node.Labels[label]; got != want {
			t.Errorf("Node %s: label %s = %q, want %q", in.ID, label, got, want)
		}
	}
	// AWS' order: private addresses of the interfaces by device index,
	// the public address, then the DNS names.
	want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: in.PrivateIP}}
	if in.PublicIP != "" {
		want = append(want, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: in.PublicIP})
	}
	want = append(want,
		corev1.NodeAddress{Type: corev1.NodeInternalDNS, Address: in.PrivateDNSName()},
		corev1.NodeAddress{Type: corev1.NodeHostName, Address: in.PrivateDNSName()})
	if in.PublicIP != "" {
		want = append(want, corev1.NodeAddress{Type: corev1.NodeExternalDNS, Address: in.PublicDNSName()})
	}
	if !slices.Equal(node.Status.Addresses, want) {
		t.Errorf("Node %s: addresses = %v, want %v", in.ID, node.Status.Addresses, want)
	}
}

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}
