package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/internal/controllers/service/servicetest"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// The daemon, configured by flags, starts the controller through its
// wiring and a LoadBalancer Service gets its ingress.
func TestDaemonRunsServiceController(t *testing.T) {
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
	o := app.NewOptions()
	o.CloudProvider = lcprovider.ProviderName
	o.CloudConfig = cfgFile
	o.ClusterName = servicetest.ClusterName
	o.Kubeconfig = env.Kubeconfig
	o.LeaderElect = false
	o.SecureServing.BindPort = 0
	o.Controllers = []string{service.ControllerName}
	reg := cloud.NewRegistry()
	if err := reg.Register(lcprovider.ProviderName, lcprovider.New); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	metrics := prometheus.NewRegistry()
	go func() {
		done <- app.Run(runCtx, o, app.Deps{Providers: reg, Metrics: metrics, SkipControllerNameValidation: true})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})

	if _, _, err := servicetest.AddNode(ctx, env.Clientset, lc.Client, "node-a", nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Clientset.CoreV1().Services("default").Create(ctx, lbService("default", "web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		svc, err := env.Clientset.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(svc.Status.LoadBalancer.Ingress) == 1, nil
	})
	if err != nil {
		t.Fatalf("no ingress from the daemon: %v", err)
	}
	families, err := metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		found = found || f.GetName() == service.MetricSyncsTotal
	}
	if !found {
		t.Errorf("%s is not registered on the registry given to the daemon", service.MetricSyncsTotal)
	}
}

func lbService(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}
