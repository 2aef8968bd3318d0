package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/app/leader"
	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/internal/controllers/service/servicetest"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// A standby under a holder that renews keeps no cache: it lists neither
// Nodes nor Services (/readyz passes all the same). The holder here is the
// test itself, renewing the Lease every retry period and then stopping, as
// a leader does when it crashes. Once the standby has seen no renewal for
// a while, it fills its caches, before the lease expires; it then takes
// the Lease and starts its controllers on those caches: no informer is
// started after it wins, and the Service created while the holder was
// dying gets its load balancer from the first reconcile.
func TestStandbyFillsItsCachesBeforeTakingOver(t *testing.T) {
	env := testbed.Start(t)
	knobs := api.DefaultKnobs()
	knobs.LBProvisioningTime = api.Duration(200 * time.Millisecond)
	lc := servicetest.StartCloud(t, knobs, servicetest.CloudOptions{})
	ctx := testbed.Context(t, 3*time.Minute)
	cfgFile := filepath.Join(t.TempDir(), "cloud.conf")
	conf := fmt.Sprintf("url: %s\ntoken: %s\nclusterName: %s\n", lc.Server.URL(), lc.Server.Token(), servicetest.ClusterName)
	if err := os.WriteFile(cfgFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := cloud.NewRegistry()
	if err := reg.Register(lcprovider.ProviderName, lcprovider.New); err != nil {
		t.Fatal(err)
	}
	const leaseName, lease, retry = "light-standby-test", 4 * time.Second, 500 * time.Millisecond
	o := app.NewOptions()
	o.CloudProvider, o.CloudConfig, o.ClusterName = lcprovider.ProviderName, cfgFile, servicetest.ClusterName
	o.Kubeconfig = env.Kubeconfig
	o.SecureServing.BindPort = 0
	o.Controllers = []string{service.ControllerName}
	o.LeaderElectName = leaseName
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = lease, 3*time.Second, retry
	if _, _, err := servicetest.AddNode(ctx, env.Clientset, lc.Client, "node-a", nil, false); err != nil {
		t.Fatal(err)
	}
	ghost := holdLease(ctx, t, env, leaseName, lease, retry)

	standby := startReplica(ctx, t, o, reg)
	// Three lease durations of renewals: the standby reads the Lease, and
	// would have listed by now if it listed as a standby.
	for range 3 {
		if err := waitContext(ctx, lease); err != nil {
			t.Fatal(err)
		}
		for _, m := range []struct {
			name, phase string
		}{{leader.MetricLeading, ""}, {leader.MetricCacheSynced, ""}, {leader.MetricInformersStarted, "standby"}, {leader.MetricInformersStarted, "leading"}} {
			if v := metricValue(t, standby.metrics, m.name, m.phase); v != 0 {
				t.Fatalf("%s{%s} = %v while another replica renews the lease, want 0", m.name, m.phase, v)
			}
		}
	}
	createLBService(ctx, t, env, "pending")
	ghost()
	// The caches fill before the takeover, not after.
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if metricValue(t, standby.metrics, leader.MetricLeading, "") == 1 {
			return false, fmt.Errorf("the standby took the lease before its caches were synced")
		}
		return metricValue(t, standby.metrics, leader.MetricCacheSynced, "") == 1, nil
	})
	if err != nil {
		t.Fatalf("the standby's caches once the holder stopped renewing: %v", err)
	}
	if v := metricValue(t, standby.metrics, leader.MetricInformersStarted, "standby"); v < 2 {
		t.Errorf("standby started %v informers before leading; want Nodes and Services", v)
	}
	waitIngress(ctx, t, env, "pending")
	if v := metricValue(t, standby.metrics, leader.MetricLeading, ""); v != 1 {
		t.Fatalf("the Service got its ingress but the standby does not lead (%s=%v)", leader.MetricLeading, v)
	}
	if v := metricValue(t, standby.metrics, leader.MetricInformersStarted, "leading"); v != 0 {
		t.Errorf("%v informers were started after the standby won the lease: their lists delayed its controllers", v)
	}
	for _, m := range []string{leader.MetricLeaderFirstCall, leader.MetricLeaderStart, leader.MetricLeaderSince} {
		if v := metricValue(t, standby.metrics, m, ""); v <= 0 {
			t.Errorf("%s = %v after the takeover, want it set", m, v)
		}
	}
}

// holdLease creates the Lease held by another identity and renews it every
// retry period, as a leader's elector does, until the returned func is
// called: then the holder is gone without releasing the Lease, as a
// crashed leader is.
func holdLease(ctx context.Context, t *testing.T, env *testbed.Env, name string, lease, retry time.Duration) (crash func()) {
	t.Helper()
	leases := env.Clientset.CoordinationV1().Leases("kube-system")
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: coordinationv1.LeaseSpec{
		HolderIdentity: ptr.To("crashing-leader"), LeaseDurationSeconds: ptr.To(int32(lease / time.Second)),
		AcquireTime: &now, RenewTime: &now}}
	if _, err := leases.Create(ctx, l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	renewCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for waitContext(renewCtx, retry) == nil {
			cur, err := leases.Get(renewCtx, name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			cur.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
			_, _ = leases.Update(renewCtx, cur, metav1.UpdateOptions{})
		}
	}()
	crash = func() {
		stop()
		<-done
	}
	t.Cleanup(crash)
	return crash
}

func waitContext(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

type replica struct {
	metrics *prometheus.Registry
	cancel  context.CancelFunc
	done    chan error
}

func startReplica(ctx context.Context, t *testing.T, o *options.Options, reg *cloud.Registry) *replica {
	t.Helper()
	runCtx, cancel := context.WithCancel(ctx)
	r := &replica{metrics: prometheus.NewRegistry(), cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- app.Run(runCtx, o, app.Deps{Providers: reg, Metrics: r.metrics, SkipControllerNameValidation: true})
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends the replica as SIGTERM does, releasing its lease; a second
// call does nothing.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	if r.done == nil {
		return
	}
	r.cancel()
	if err := <-r.done; err != nil {
		t.Errorf("replica: %v", err)
	}
	r.done = nil
}

func createLBService(ctx context.Context, t *testing.T, env *testbed.Env, name string) {
	t.Helper()
	if _, err := env.Clientset.CoreV1().Services("default").Create(ctx, lbService("default", name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitIngress(ctx context.Context, t *testing.T, env *testbed.Env, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		svc, err := env.Clientset.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(svc.Status.LoadBalancer.Ingress) == 1, nil
	})
	if err != nil {
		t.Fatalf("Service %s got no ingress: %v", name, err)
	}
}

// metricValue reads a gauge or counter; phase selects the "phase" label
// when not empty. A metric not exported yet reads 0.
func metricValue(t *testing.T, g prometheus.Gatherer, name, phase string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			matches := phase == ""
			for _, l := range m.GetLabel() {
				matches = matches || (l.GetName() == "phase" && l.GetValue() == phase)
			}
			if !matches {
				continue
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}
