package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// The cluster DNS: CoreDNS (bin/coredns, packed as bin/images/coredns.tar)
// under kube-dns' names, so that pods on the real nodes resolve Services
// as in any cluster (Kubernetes' e2e specs reach Services by name).
const (
	// DNSService is the cluster DNS Service's name, kube-dns as kubeadm
	// and every managed cluster name it.
	DNSService = "kube-dns"
	// ClusterDomain is the cluster's DNS domain.
	ClusterDomain = "cluster.local"
	dnsImage      = "stratus.local/coredns:v1"
	dnsUser       = "system:coredns"
	// dnsHealthPort and dnsReadyPort are CoreDNS' health and ready
	// ports, off their defaults (8080, 8181) because the pod shares its
	// node's network namespace with whatever else runs there.
	dnsHealthPort = 8053
	dnsReadyPort  = 8054
)

// ClusterDNSAddr is the kube-dns Service's ClusterIP: the tenth address of
// the control plane's Service range (10.0.0.0/24), kubeadm's choice.
func ClusterDNSAddr() netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, 10}) }

// corefile serves cluster.local and the reverse zones from the API and
// nothing else: no forward plugin, since the sandbox's traffic stays on
// the machine; other names get SERVFAIL at once rather than after a
// timeout.
func corefile() string {
	return `.:53 {
    errors
    health :` + strconv.Itoa(dnsHealthPort) + `
    ready :` + strconv.Itoa(dnsReadyPort) + `
    kubernetes ` + ClusterDomain + ` in-addr.arpa ip6.arpa {
        kubeconfig /var/run/coredns/kubeconfig
        pods insecure
        ttl 30
    }
    cache 30
    loadbalance
}
`
}

// startClusterDNS deploys CoreDNS as kube-system's kube-dns (RBAC,
// credentials, Corefile, Deployment, Service) and, unless the controller
// manager is the user's (--no-ccm), waits for it to be available. Its pod
// uses its node's network namespace: the API server is on the machine's
// loopback, which a node's namespace relays to and a pod's own namespace
// cannot reach; kube-proxy sends the Service's ClusterIP to the node's
// address, port 53.
func (s *sandbox) startClusterDNS(ctx context.Context) error {
	if err := s.applyDNSRBAC(ctx); err != nil {
		return err
	}
	digest, err := s.applyDNSConfig(ctx)
	if err != nil {
		return err
	}
	if err := upsert(ctx, s.kube.AppsV1().Deployments(metav1.NamespaceSystem), dnsDeployment(digest), "Deployment"); err != nil {
		return err
	}
	if err := s.ensureDNSService(ctx); err != nil {
		return err
	}
	if _, err := s.freeStrandedDNSPods(ctx); err != nil {
		return err
	}
	if s.o.NoCCM {
		// The nodes keep their uninitialized taint until the user's
		// controller manager runs; the pod is scheduled then.
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.ReadyTimeout)
	defer cancel()
	// progress is the last rollout state read; lastErr the last failed
	// read, kept apart so that the deadline's own error does not hide
	// where the rollout stood.
	var progress, lastErr string
	err = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		d, err := s.kube.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, DNSService, metav1.GetOptions{})
		if err != nil {
			lastErr = err.Error()
			return false, nil
		}
		if dnsRolledOut(d, &progress) {
			return true, nil
		}
		// A pod the ReplicaSet placed after the first look, on a node this
		// run does not run, is as stranded as one of the last run.
		pods, err := s.freeStrandedDNSPods(ctx)
		if err != nil {
			lastErr = err.Error()
			return false, nil
		}
		progress += "; pods: " + dnsPodSummary(pods)
		return false, nil
	})
	if err != nil {
		if lastErr != "" {
			progress += "; last error: " + lastErr
		}
		return fmt.Errorf("sandbox: cluster DNS (Deployment kube-system/%s) not available: %s: %w", DNSService, progress, err)
	}
	return nil
}

// dnsPodSummary says where each cluster DNS pod is and how it stands, for
// the error when the rollout does not finish.
func dnsPodSummary(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "none"
	}
	var parts []string
	for _, p := range pods {
		state := string(p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil {
				state += "/" + w.Reason
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
				state += "/unscheduled: " + c.Message
			}
		}
		node := p.Spec.NodeName
		if node == "" {
			node = "no node"
		}
		parts = append(parts, fmt.Sprintf("%s on %s %s", p.Name, node, state))
	}
	return strings.Join(parts, ", ")
}

// applyDNSRBAC grants CoreDNS' user what upstream's system:coredns
// ClusterRole does: read Services, EndpointSlices, Pods and Namespaces.
func (s *sandbox) applyDNSRBAC(ctx context.Context) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: dnsUser},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: dnsUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: dnsUser},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: dnsUser}},
	}
	rbac := s.kube.RbacV1()
	if err := createOrKeep(ctx, rbac.ClusterRoles().Create, role, "ClusterRole"); err != nil {
		return err
	}
	return createOrKeep(ctx, rbac.ClusterRoleBindings().Create, binding, "ClusterRoleBinding")
}

// applyDNSConfig writes the Corefile ConfigMap and, each run (the control
// plane's authority is new each time), the Secret with CoreDNS' kubeconfig:
// a client certificate for system:coredns and the API server's address on
// 127.0.0.1, which the node's namespace relays. It returns a digest of
// both, which the pod template carries so that new ones roll the pods.
func (s *sandbox) applyDNSConfig(ctx context.Context) (string, error) {
	cfg, err := s.plane.UserConfig(dnsUser)
	if err != nil {
		return "", fmt.Errorf("sandbox: cluster DNS: %w", err)
	}
	path := filepath.Join(s.state, "run", "coredns.kubeconfig")
	if err := localcluster.WriteKubeconfig(cfg, path); err != nil {
		return "", fmt.Errorf("sandbox: cluster DNS: %w", err)
	}
	kubeconfig, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("sandbox: cluster DNS: %w", err)
	}
	meta := metav1.ObjectMeta{Name: DNSService, Namespace: metav1.NamespaceSystem}
	cm := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"Corefile": corefile()}}
	secret := &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"kubeconfig": kubeconfig}}
	core := s.kube.CoreV1()
	if err := upsert(ctx, core.ConfigMaps(meta.Namespace), cm, "ConfigMap"); err != nil {
		return "", err
	}
	if err := upsert(ctx, core.Secrets(meta.Namespace), secret, "Secret"); err != nil {
		return "", err
	}
	sum := sha256.Sum256(append([]byte(corefile()), kubeconfig...))
	return hex.EncodeToString(sum[:8]), nil
}

// createOrKeep creates obj, keeping one left by an earlier run of the
// same state directory.
func createOrKeep[T any](ctx context.Context, create func(context.Context, T, metav1.CreateOptions) (T, error), obj T, kind string) error {
	if _, err := create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("sandbox: cluster DNS: create %s %s: %w", kind, DNSService, err)
	}
	return nil
}

// dnsRolledOut says whether d's current template runs everywhere and
// nothing older does (kubectl rollout status' test): a pod of an earlier
// run, bound to a node of the same name, must not pass for the new one.
func dnsRolledOut(d *appsv1.Deployment, last *string) bool {
	st, want := d.Status, *d.Spec.Replicas
	*last = fmt.Sprintf("%d of %d replicas updated, %d available, %d in all", st.UpdatedReplicas, want, st.AvailableReplicas, st.Replicas)
	return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want &&
		st.Replicas == st.UpdatedReplicas && st.AvailableReplicas == st.UpdatedReplicas
}

// ensureDNSService creates kube-dns unless an earlier run of the same
// state directory did. It looks first: creating a Service whose ClusterIP
// is taken fails on the address, not with AlreadyExists.
func (s *sandbox) ensureDNSService(ctx context.Context) error {
	services := s.kube.CoreV1().Services(metav1.NamespaceSystem)
	_, err := services.Get(ctx, DNSService, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = services.Create(ctx, dnsServiceObject(), metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("sandbox: cluster DNS: Service %s: %w", DNSService, err)
	}
	return nil
}

// upsert replaces obj (unconditionally: the sandbox owns it), or creates
// it when missing.
func upsert[T any, C interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}](ctx context.Context, c C, obj T, kind string) error {
	_, err := c.Update(ctx, obj, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = c.Create(ctx, obj, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("sandbox: cluster DNS: apply %s %s: %w", kind, DNSService, err)
	}
	return nil
}

// freeStrandedDNSPods deletes the CoreDNS pods a resumed sandbox finds on
// a node it no longer runs (a real node of the last run that is stopped or
// not started this time): their kubelet is gone, so they would stay
// unavailable until taint-based eviction, minutes later, and hold the
// Deployment's one replica. Deleted, the ReplicaSet places a new pod on a
// real node of this run.
// It returns the pods it listed, deleted ones included.
func (s *sandbox) freeStrandedDNSPods(ctx context.Context) ([]corev1.Pod, error) {
	pods, err := s.kube.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=" + DNSService})
	if err != nil {
		return nil, fmt.Errorf("sandbox: list the cluster DNS pods: %w", err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || s.realNode(p.Spec.NodeName) != nil {
			continue
		}
		err := s.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("sandbox: delete cluster DNS pod %s on node %s, which this run does not run: %w", p.Name, p.Spec.NodeName, err)
		}
	}
	return pods.Items, nil
}
