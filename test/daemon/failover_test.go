package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

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

// Two replicas with leader election. The standby's caches are synced
// before it wins the lease (it lists Nodes and Services as a standby, and
// /readyz says so), and once the leader goes it starts its controllers on
// those caches: no informer is started, so no list is waited for, after it
// wins; the Service created while nobody led gets its load balancer from
// the first reconcile, and the leadership metrics say when.
func TestStandbyTakesOverWithWarmCaches(t *testing.T) {
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
	replicaOptions := func() *options.Options {
		o := app.NewOptions()
		o.CloudProvider, o.CloudConfig, o.ClusterName = lcprovider.ProviderName, cfgFile, servicetest.ClusterName
		o.Kubeconfig = env.Kubeconfig
		o.SecureServing.BindPort = 0
		o.Controllers = []string{service.ControllerName}
		o.LeaderElectName = "warm-standby-test"
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
		return o
	}
	if _, _, err := servicetest.AddNode(ctx, env.Clientset, lc.Client, "node-a", nil, false); err != nil {
		t.Fatal(err)
	}

	first := startReplica(ctx, t, replicaOptions(), reg)
	waitMetric(ctx, t, "the first replica to lead", first.metrics, leader.MetricLeading, "", 1)
	standby := startReplica(ctx, t, replicaOptions(), reg)
	waitMetric(ctx, t, "the standby's caches to sync", standby.metrics, leader.MetricCacheSynced, "", 1)
	if v := metricValue(t, standby.metrics, leader.MetricLeading, ""); v != 0 {
		t.Fatalf("both replicas lead (%s=%v on the second)", leader.MetricLeading, v)
	}
	if v := metricValue(t, standby.metrics, leader.MetricInformersStarted, "standby"); v < 2 {
		t.Errorf("standby started %v informers before leading; want Nodes and Services", v)
	}
	createLBService(ctx, t, env, "before")
	waitIngress(ctx, t, env, "before")

	first.stop(t)
	// Created while nobody leads: the standby must act on it as it wins.
	createLBService(ctx, t, env, "pending")
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

func waitMetric(ctx context.Context, t *testing.T, what string, g prometheus.Gatherer, name, phase string, want float64) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return metricValue(t, g, name, phase) == want, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s (%s = %v): %v", what, name, want, err)
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
