package serving_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/spf13/pflag"
	ccmconfig "k8s.io/cloud-provider/config"
	ccmconfigv1alpha1 "k8s.io/cloud-provider/config/v1alpha1"
	ccmoptions "k8s.io/cloud-provider/options"

	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/app/serving"
)

// upstreamConfig is what upstream's cloud-controller-manager serves on
// /configz for args: its options parse them and fill the component config
// as its ApplyTo does (the parts that need no API server), converted as its
// Run converts it.
func upstreamConfig(t *testing.T, args ...string) *ccmconfigv1alpha1.CloudControllerManagerConfiguration {
	t.Helper()
	s, err := ccmoptions.NewCloudControllerManagerOptions()
	if err != nil {
		t.Fatal(err)
	}
	table := app.NewOptions().Known()
	fs := pflag.NewFlagSet("upstream", pflag.ContinueOnError)
	for _, f := range s.Flags(options.Names(table), nil, options.Aliases(table), nil, nil).FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	internal := &ccmconfig.CloudControllerManagerConfiguration{
		NodeController:            *s.NodeController.NodeControllerConfiguration,
		NodeStatusUpdateFrequency: s.NodeStatusUpdateFrequency,
	}
	if err := s.Generic.ApplyTo(&internal.Generic, options.Names(table), nil, options.Aliases(table)); err != nil {
		t.Fatal(err)
	}
	for _, apply := range []func() error{
		func() error { return s.KubeCloudShared.ApplyTo(&internal.KubeCloudShared) },
		func() error { return s.ServiceController.ApplyTo(&internal.ServiceController) },
		func() error { return s.NodeLifecycleController.ApplyTo(&internal.NodeLifecycleController) },
		func() error { return s.Webhook.ApplyTo(&internal.Webhook) },
	} {
		if err := apply(); err != nil {
			t.Fatal(err)
		}
	}
	out := &ccmconfigv1alpha1.CloudControllerManagerConfiguration{}
	if err := ccmconfigv1alpha1.Convert_config_CloudControllerManagerConfiguration_To_v1alpha1_CloudControllerManagerConfiguration(internal, out, nil); err != nil {
		t.Fatal(err)
	}
	out.SetGroupVersionKind(ccmconfigv1alpha1.SchemeGroupVersion.WithKind("CloudControllerManagerConfiguration"))
	return out
}

// stratusConfig is what Stratus serves on /configz for args.
func stratusConfig(t *testing.T, args ...string) *ccmconfigv1alpha1.CloudControllerManagerConfiguration {
	t.Helper()
	o := app.NewOptions()
	fs := pflag.NewFlagSet("stratus", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return serving.ComponentConfig(o, o.Known(), nil)
}

// TestConfigzMatchesUpstream: for the same flags, /configz says what
// upstream's says, except the defaults docs/operations.md lists as Stratus'
// own (node and service sync workers) when no flag sets them.
func TestConfigzMatchesUpstream(t *testing.T) {
	for name, args := range map[string][]string{
		"defaults": nil,
		"vendor flags": {
			"--cloud-provider=hcloud", "--cloud-config=/etc/cloud.conf", "--cluster-name=prod", "--controllers=*,-route,nodeipam",
			"--allocate-node-cidrs", "--cluster-cidr=10.244.0.0/16", "--configure-cloud-routes=false", "--cidr-allocator-type=CloudAllocator",
			"--leader-elect-resource-name=hcloud-cloud-controller-manager", "--concurrent-service-syncs=3", "--concurrent-node-syncs=2",
			"--use-service-account-credentials", "--node-status-update-frequency=1m", "--kubeconfig=/etc/kubeconfig",
			"--kube-api-qps=50", "--leader-elect=false", "--profiling=false", "--webhooks=*", "--allow-untagged-cloud",
			"--route-reconciliation-period=30s", "--node-monitor-period=7s", "--controller-start-interval=1s",
			"--concurrent-node-lifecycle-syncs=4",
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, want := stratusConfig(t, args...), upstreamConfig(t, args...)
			if want.NodeController.ConcurrentNodeSyncs == 1 {
				want.NodeController.ConcurrentNodeSyncs = options.DefaultConcurrentNodeSyncs
			}
			if want.ServiceController.ConcurrentServiceSyncs == 1 {
				want.ServiceController.ConcurrentServiceSyncs = options.DefaultConcurrentServiceSyncs
			}
			if !reflect.DeepEqual(got, want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(want, "", " ")
				t.Fatalf("/configz differs from upstream's:\ngot  %s\nwant %s", g, w)
			}
		})
	}
}

// TestConfigzHandlerShape: the body is component-base's configz shape, one
// object keyed by upstream's ConfigzName, with apiVersion and kind.
func TestConfigzHandlerShape(t *testing.T) {
	o := app.NewOptions()
	h, err := serving.ConfigzHandler(serving.ComponentConfig(o, o.Known(), nil))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, serving.ConfigzPath, nil))
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var body map[string]map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("%v: %s", err, rec.Body.String())
	}
	cfg, ok := body["cloudcontrollermanager.config.k8s.io"]
	if !ok || len(body) != 1 {
		t.Fatalf("keys of %s", rec.Body.String())
	}
	if cfg["kind"] != "CloudControllerManagerConfiguration" || cfg["apiVersion"] != "cloudcontrollermanager.config.k8s.io/v1alpha1" {
		t.Errorf("kind %v apiVersion %v", cfg["kind"], cfg["apiVersion"])
	}
	for _, k := range []string{"Generic", "KubeCloudShared", "NodeController", "ServiceController", "NodeStatusUpdateFrequency", "Webhook"} {
		if _, ok := cfg[k]; !ok {
			t.Errorf("no %s in %s", k, rec.Body.String())
		}
	}
}
