package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

// KwokAnnotation marks the nodes the kwok of StartKwok manages.
const KwokAnnotation = "kwok.x-k8s.io/node"

// NodeOptions shape a node created by CreateNode.
type NodeOptions struct {
	// ProvidedNodeIP sets the kubelet's alpha.kubernetes.io/provided-node-ip
	// annotation, as kubelet --node-ip does.
	ProvidedNodeIP string
	// ProviderID, when set, is written as a kubelet with --provider-id would.
	ProviderID string
	// Labels are added to the node.
	Labels map[string]string
	// Unmanaged leaves the node out of kwok's hands, so the test owns its
	// status (for NotReady scenarios).
	Unmanaged bool
}

// NewNode returns a Node as a kubelet started with --cloud-provider=external
// registers it: the uninitialized taint, no addresses, no providerID.
func NewNode(name string, o NodeOptions) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
			Annotations: map[string]string{},
		},
		Spec: corev1.NodeSpec{
			ProviderID: o.ProviderID,
			Taints: []corev1.Taint{{
				Key:    cloudproviderapi.TaintExternalCloudProvider,
				Value:  "true",
				Effect: corev1.TaintEffectNoSchedule,
			}},
		},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("4"),
				corev1.ResourceMemory: resource.MustParse("16Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
		},
	}
	for k, v := range o.Labels {
		n.Labels[k] = v
	}
	if !o.Unmanaged {
		n.Annotations[KwokAnnotation] = "fake"
	}
	if o.ProvidedNodeIP != "" {
		n.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr] = o.ProvidedNodeIP
	}
	return n
}

// CreateNode registers a node as a kubelet with --cloud-provider=external does.
func CreateNode(ctx context.Context, cs kubernetes.Interface, name string, o NodeOptions) (*corev1.Node, error) {
	n, err := cs.CoreV1().Nodes().Create(ctx, NewNode(name, o), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create node %s: %w", name, err)
	}
	return n, nil
}

// SetReady writes the node's Ready condition, as a kubelet's heartbeat
// would; use it on Unmanaged nodes.
func SetReady(ctx context.Context, cs kubernetes.Interface, name string, status corev1.ConditionStatus) error {
	// The CCM writes the same Node's status (addresses, conditions) at the
	// same time, so an update may conflict; retry on a fresh copy.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		cond := corev1.NodeCondition{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "Test", Message: "set by the test"}
		replaced := false
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i] = cond
				replaced = true
			}
		}
		if !replaced {
			n.Status.Conditions = append(n.Status.Conditions, cond)
		}
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("set node %s Ready=%s: %w", name, status, err)
	}
	return nil
}
