package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/stratus-ccm/stratus/bench/internal/harness"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

const (
	benchLabel    = "bench"
	benchValue    = "rollbench"
	targetLabel   = "target"
	realNodeLabel = "sandbox.stratus.dev/real-node"
	demoImage     = "stratus.local/demo:v1"
	// restartAnnotation is kubectl rollout restart's: patching it is
	// what that command does.
	restartAnnotation = "kubectl.kubernetes.io/restartedAt"
)

// lbWrites are the cloud calls that change a load balancer: what a
// rolling update may cost.
func lbWrites() []string {
	return []string{"CreateLoadBalancer", "UpdateLoadBalancer", "DeleteLoadBalancer"}
}

// mode is a kind of load-balancer target.
type mode int

const (
	nodeTargets mode = iota
	endpointTargets
)

func (m mode) String() string {
	if m == endpointTargets {
		return "endpoint targets"
	}
	return "node targets"
}

// slug names the mode's Deployment, Service and pods' label.
func (m mode) slug() string {
	if m == endpointTargets {
		return "endpoints"
	}
	return "nodes"
}

func (m mode) name() string { return "roll-" + m.slug() }

// bench holds the cluster's clients and what the pod watch saw.
type bench struct {
	cs    kubernetes.Interface
	cloud *lcclient.Client
	o     options
	pods  listersv1.PodLister

	mu sync.Mutex
	// ready is when each pod was first seen Ready, by name.
	ready map[string]readiness
}

// readiness is a pod's first Ready: when the watch saw it, and the
// condition's lastTransitionTime (which has a resolution of a second).
type readiness struct {
	seen, transition time.Time
}

// measure sets up one Deployment and Service per mode and rolls each
// o.rollouts times, the modes taking turns so that a drift of the
// machine's load touches both alike.
func (b *bench) measure(ctx context.Context, modes []mode) ([]modeResult, error) {
	if err := b.watchPods(ctx); err != nil {
		return nil, err
	}
	vips := map[mode]string{}
	for _, m := range modes {
		vip, err := b.setUp(ctx, m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		vips[m] = vip
	}
	results := make([]modeResult, len(modes))
	for i, m := range modes {
		results[i].mode = m
	}
	for r := range b.o.rollouts {
		for i, m := range modes {
			fmt.Fprintf(os.Stderr, "rolling update %d of %s (VIP %s) ...\n", r+1, m.name(), vips[m])
			res, err := b.rollout(ctx, m, vips[m], r)
			if err != nil {
				return nil, fmt.Errorf("%s, rolling update %d: %w", m, r+1, err)
			}
			fmt.Fprintf(os.Stderr, "  %s\n", res.summary())
			results[i].runs = append(results[i].runs, res)
		}
	}
	return results, nil
}

// watchPods records, for every pod of the benchmark, when it first turned
// Ready. A watch sees it within milliseconds; the condition's own time is
// truncated to the second.
func (b *bench) watchPods(ctx context.Context) error {
	b.ready = map[string]readiness{}
	f := informers.NewSharedInformerFactoryWithOptions(b.cs, 0, informers.WithNamespace(metav1.NamespaceDefault),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = benchLabel + "=" + benchValue }))
	inf := f.Core().V1().Pods()
	record := func(obj any) {
		now := time.Now()
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		for _, c := range p.Status.Conditions {
			if c.Type != corev1.PodReady || c.Status != corev1.ConditionTrue {
				continue
			}
			b.mu.Lock()
			if _, seen := b.ready[p.Name]; !seen {
				b.ready[p.Name] = readiness{seen: now, transition: c.LastTransitionTime.Time}
			}
			b.mu.Unlock()
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		return fmt.Errorf("pod watch: %w", err)
	}
	b.pods = inf.Lister()
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("pod watch: %v did not sync", typ)
		}
	}
	return nil
}

// setUp creates m's Deployment and Service and returns the VIP once it
// answers.
func (b *bench) setUp(ctx context.Context, m mode) (string, error) {
	if _, err := b.cs.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment(m, b.o), metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create Deployment: %w", err)
	}
	if _, err := b.cs.CoreV1().Services(metav1.NamespaceDefault).Create(ctx, service(m), metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create Service: %w", err)
	}
	var vip string
	err := harness.Poll(ctx, 500*time.Millisecond, 3*time.Minute, "the VIP of "+m.name(), func(ctx context.Context) (bool, error) {
		s, err := b.cs.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, m.name(), metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // the API server may blink; the poll's timeout bounds it
		}
		vip = ingressIPv4(s.Status.LoadBalancer.Ingress)
		return vip != "", nil
	})
	if err != nil {
		return "", err
	}
	if err := b.waitRolledOut(ctx, m, 3*time.Minute); err != nil {
		return "", err
	}
	// Every replica answering through the VIP (the client names each),
	// so the first rolling update starts from a load balancer that has
	// them all.
	addr := net.JoinHostPort(vip, "80")
	answered := map[string]bool{}
	err = harness.Poll(ctx, 100*time.Millisecond, 3*time.Minute, "every pod of "+m.name()+" to answer through "+addr, func(ctx context.Context) (bool, error) {
		if a := request(ctx, addr); a.err == nil {
			answered[a.pod] = true
		}
		return len(answered) >= b.o.replicas, nil
	})
	return vip, err
}

// ingressIPv4 is the load balancer's IPv4 address (the machine reaches the
// VIPs through the sandbox's route); empty until it has one.
func ingressIPv4(in []corev1.LoadBalancerIngress) string {
	for _, i := range in {
		if ip := net.ParseIP(i.IP); ip != nil && ip.To4() != nil {
			return i.IP
		}
	}
	return ""
}

func podLabels(m mode) map[string]string {
	return map[string]string{benchLabel: benchValue, targetLabel: m.slug()}
}

// deployment is m's Deployment of the demo on the real nodes. A new pod
// takes traffic once Ready (the probe every second); an old one keeps
// serving for o.drain after it is told to stop, while load balancers and
// kube-proxy stop sending it new connections, as the e2e spec's pods
// delay their shutdown; maxUnavailable 0 keeps every replica serving.
func deployment(m mode, o options) *appsv1.Deployment {
	env := func(k, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	c := corev1.Container{
		Name: "demo", Image: demoImage, ImagePullPolicy: corev1.PullNever,
		Args:  []string{"-udp="},
		Env:   []corev1.EnvVar{env("POD_NAME", "metadata.name"), env("NODE_NAME", "spec.nodeName")},
		Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1,
		},
	}
	if s := int64(o.drain / time.Second); s > 0 {
		c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: s}}}
	}
	l := podLabels(m)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: m.name(), Namespace: metav1.NamespaceDefault},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(o.replicas)), MinReadySeconds: 0,
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{realNodeLabel: "true"},
					// Past the preStop sleep, so that the kubelet never cuts it short.
					TerminationGracePeriodSeconds: new(int64(o.drain/time.Second) + 5),
					Containers:                    []corev1.Container{c},
				},
			},
		},
	}
}

// service is m's LoadBalancer Service: node targets by default
// (externalTrafficPolicy Cluster), endpoint targets without node ports.
func service(m mode) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: m.name(), Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: podLabels(m),
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			Ports:                 []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if m == endpointTargets {
		s.Spec.AllocateLoadBalancerNodePorts = new(false)
	}
	return s
}

// rollout runs one rolling update of m's Deployment under load and
// returns what it cost.
func (b *bench) rollout(ctx context.Context, m mode, vip string, round int) (rolloutResult, error) {
	res := rolloutResult{mode: m}
	before, err := b.podNames(m)
	if err != nil {
		return res, err
	}
	statsBefore, err := b.cloud.Stats(ctx)
	if err != nil {
		return res, fmt.Errorf("localcloud stats: %w", err)
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	ld := newLoad()
	loadDone := make(chan struct{})
	go func() { ld.run(loadCtx, net.JoinHostPort(vip, "80"), b.o.rate); close(loadDone) }()
	// A moment of load first: failures before the patch would be the
	// load balancer's, not the rolling update's.
	if err := sleep(ctx, time.Second); err != nil {
		return res, err
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{restartAnnotation: fmt.Sprintf("%s-%d", time.Now().UTC().Format(time.RFC3339Nano), round)}}}}})
	if err != nil {
		return res, fmt.Errorf("patch: %w", err)
	}
	start := time.Now()
	res.start = start
	if _, err := b.cs.AppsV1().Deployments(metav1.NamespaceDefault).Patch(ctx, m.name(), types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return res, fmt.Errorf("patch Deployment: %w", err)
	}
	if err := b.waitRolledOut(ctx, m, 5*time.Minute); err != nil {
		return res, err
	}
	res.rollout = time.Since(start)
	err = harness.Poll(ctx, 100*time.Millisecond, b.o.drain+2*time.Minute, "the old pods of "+m.name()+" to be gone", func(context.Context) (bool, error) {
		now, err := b.podNames(m)
		if err != nil {
			return false, err
		}
		for n := range before {
			if now[n] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return res, err
	}
	res.churn = time.Since(start)
	if err := sleep(ctx, b.o.tail); err != nil {
		return res, err
	}
	stopLoad()
	<-loadDone
	statsAfter, err := b.cloud.Stats(ctx)
	if err != nil {
		return res, fmt.Errorf("localcloud stats: %w", err)
	}
	res.calls, res.allCalls = callsBetween(statsBefore, statsAfter)
	res.load = ld.summary()
	after, err := b.podNames(m)
	if err != nil {
		return res, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for n := range after {
		if before[n] {
			continue
		}
		res.newPods++
		r, ok := b.ready[n]
		first, answered := res.load.first[n]
		if !ok || !answered {
			res.unanswered++
			continue
		}
		res.fromSeen = append(res.fromSeen, first.Sub(r.seen))
		res.fromTransition = append(res.fromTransition, first.Sub(r.transition))
	}
	return res, nil
}

// callsBetween is the load-balancer writes by operation and all counted
// calls between two readings of localcloud's counters.
func callsBetween(before, after *api.Stats) (map[string]int64, int64) {
	calls := map[string]int64{}
	for _, op := range lbWrites() {
		calls[op] = after.Count(op) - before.Count(op)
	}
	return calls, after.Total - before.Total
}

// podNames is m's pods, terminating ones included.
func (b *bench) podNames(m mode) (map[string]bool, error) {
	ps, err := b.pods.Pods(metav1.NamespaceDefault).List(labels.SelectorFromSet(podLabels(m)))
	if err != nil {
		return nil, fmt.Errorf("pods: %w", err)
	}
	out := make(map[string]bool, len(ps))
	for _, p := range ps {
		out[p.Name] = true
	}
	return out, nil
}

// waitRolledOut waits until m's Deployment has every replica updated and
// available and no other, as `kubectl rollout status` does.
func (b *bench) waitRolledOut(ctx context.Context, m mode, timeout time.Duration) error {
	return harness.Poll(ctx, 100*time.Millisecond, timeout, "the rollout of "+m.name(), func(ctx context.Context) (bool, error) {
		d, err := b.cs.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, m.name(), metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // the API server may blink; the poll's timeout bounds it
		}
		return rolledOut(d), nil
	})
}

func rolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return errors.Join(errors.New("interrupted"), ctx.Err())
	case <-t.C:
		return nil
	}
}
