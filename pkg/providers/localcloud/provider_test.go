package localcloud_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

type env struct {
	ctx   context.Context
	srv   *server.Server
	admin *client.Client
	cloud cloudprovider.Interface
	pools store.Pools
}

// newEnv starts a real localcloud on 127.0.0.1:0 and builds the provider
// through its registry factory, from a config file as --cloud-config gives.
func newEnv(t *testing.T, provisioning time.Duration) *env {
	t.Helper()
	return newEnvPools(t, provisioning, testbed.InstancePool(t))
}

func newEnvPools(t *testing.T, provisioning time.Duration, internal netip.Prefix) *env {
	t.Helper()
	return newEnvWith(t, provisioning, internal, "", netip.Prefix{})
}

// newEnvWith is newEnvPools with extra provider config lines and an IPv6
// VIP pool (none when invalid).
func newEnvWith(t *testing.T, provisioning time.Duration, internal netip.Prefix, extraConfig string, vip6 netip.Prefix) *env {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	k := api.DefaultKnobs()
	k.LBProvisioningTime = api.Duration(provisioning)
	k.LBDeletionTime = 0
	pools := store.Pools{
		Internal: internal,
		VIP:      testbed.VIPPool(t),
		VIP6:     vip6,
	}
	dir := t.TempDir()
	srv, err := server.New(server.Config{StateDir: dir, Knobs: &k, Pools: pools})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := fmt.Sprintf("# test\nurl: %s\ntokenFile: %s\nclusterName: kubernetes\n%s", srv.URL(), filepath.Join(dir, server.TokenFileName), extraConfig)
	prov, err := lcprovider.New(strings.NewReader(cfg))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	admin, _ := client.New(srv.URL(), srv.Token())
	return &env{ctx: ctx, srv: srv, admin: admin, cloud: prov, pools: pools}
}

func (e *env) instance(t *testing.T, name string) *api.Instance {
	t.Helper()
	inst, err := e.admin.CreateInstance(e.ctx, api.CreateInstanceRequest{Name: name, Zone: "zone-a", Region: "region-1", Type: "small", External: true})
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func (e *env) count(t *testing.T, op string) int64 {
	t.Helper()
	s, err := e.admin.Stats(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s.Count(op)
}

func node(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func TestNewConfig(t *testing.T) {
	t.Parallel()
	if _, err := lcprovider.New(nil); err == nil || !strings.Contains(err.Error(), "cloud-config") {
		t.Fatalf("nil config: %v", err)
	}
	for _, tc := range []struct{ cfg, want string }{
		{"token: x\n", "url"},
		{"url: http://127.0.0.1:1\n", "token"},
		{"url: http://127.0.0.1:1\ntoken: x\nzone: a\n", "zone"},
		{"url: http://127.0.0.1:1\ntoken: x\nmaxRetries: -2\n", "maxRetries"},
		{"url: http://127.0.0.1:1\ntokenFile: /nonexistent/token\n", "tokenFile"},
		{"url: ftp://x\ntoken: x\n", "ftp://x"},
		{"url: http://127.0.0.1:1\ntoken: x\nrateLimitQPS: fast\n", "rateLimitQPS"},
		{"url: http://127.0.0.1:1\ntoken: x\nrateLimitBurst: 0\n", "rateLimitBurst"},
		{"url: http://127.0.0.1:1\ntoken: x\nrateLimitQPS: NaN\n", "rateLimitQPS: \"NaN\""},
		{"url: http://127.0.0.1:1\ntoken: x\nrateLimitQPS: +Inf\n", "rateLimitQPS: \"+Inf\""},
		{"url: http://127.0.0.1:1\ntoken: x\nrateLimitQPS: -1\n", "rateLimitQPS: \"-1\""},
		{"url: http://127.0.0.1:1\ntoken: x\nmaxRetries: 99999999\n", "maxRetries"},
		{"url: http://127.0.0.1:1\ntoken: x\ntoken: y\n", "line 3: token: repeats line 2"},
	} {
		if _, err := lcprovider.New(strings.NewReader(tc.cfg)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: want error naming %s, got %v", tc.cfg, tc.want, err)
		}
	}
	// Every bad line is reported at once, with the missing settings.
	_, err := lcprovider.ParseConfig(strings.NewReader("rateLimitQPS: NaN\nzone: a\nmaxRetries: x\n"))
	for _, want := range []string{"line 1: rateLimitQPS", "line 2: unknown key \"zone\"", "line 3: maxRetries", "url is required", "token or tokenFile"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("all at once: %v does not name %s", err, want)
		}
	}
	cfg, err := lcprovider.ParseConfig(strings.NewReader("[global]\nurl = \"http://127.0.0.1:1\"\ntoken = abc\n"))
	if err != nil || cfg.URL != "http://127.0.0.1:1" || cfg.Token != "abc" || cfg.ClusterName != "kubernetes" {
		t.Fatalf("INI form: %v %+v", err, cfg)
	}
	c, err := lcprovider.New(strings.NewReader("url: http://127.0.0.1:1\ntoken: x\n"))
	if err != nil || c.ProviderName() != lcprovider.ProviderName {
		t.Fatal(err)
	}
	if _, ok := c.Zones(); ok {
		t.Error("Zones should be unsupported")
	}
	if _, ok := c.Clusters(); ok {
		t.Error("Clusters should be unsupported")
	}
	if _, ok := c.Instances(); ok {
		t.Error("Instances (v1) should be unsupported")
	}
}

func TestInstancesV2(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	inst := e.instance(t, "node-1")
	iv2, ok := e.cloud.InstancesV2()
	if !ok {
		t.Fatal("no InstancesV2")
	}
	byName := node("node-1", "")
	if ok, err := iv2.InstanceExists(e.ctx, byName); !ok || err != nil {
		t.Fatalf("exists by name: %v %v", ok, err)
	}
	md, err := iv2.InstanceMetadata(e.ctx, byName)
	if err != nil {
		t.Fatal(err)
	}
	if md.ProviderID != "localcloud://"+inst.ID || md.Zone != "zone-a" || md.Region != "region-1" || md.InstanceType != "small" {
		t.Fatalf("metadata %+v", md)
	}
	want := []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: inst.Addresses.Internal},
		{Type: corev1.NodeExternalIP, Address: inst.Addresses.External},
		{Type: corev1.NodeHostName, Address: "node-1"},
	}
	if fmt.Sprint(md.NodeAddresses) != fmt.Sprint(want) {
		t.Fatalf("addresses %v, want %v", md.NodeAddresses, want)
	}
	byID := node("node-1", md.ProviderID)
	if down, err := iv2.InstanceShutdown(e.ctx, byID); down || err != nil {
		t.Fatalf("shutdown of running: %v %v", down, err)
	}
	if _, err := e.admin.StopInstance(e.ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	if down, err := iv2.InstanceShutdown(e.ctx, byID); !down || err != nil {
		t.Fatalf("shutdown of stopped: %v %v", down, err)
	}
	if _, err := e.admin.DeleteInstance(e.ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*corev1.Node{byID, byName, node("never-existed", ""), node("x", "localcloud://i-0123456789abcdef")} {
		if ok, err := iv2.InstanceExists(e.ctx, n); ok || err != nil {
			t.Errorf("%s/%s: exists=%v err=%v, want false, nil", n.Name, n.Spec.ProviderID, ok, err)
		}
		if _, err := iv2.InstanceMetadata(e.ctx, n); !errors.Is(err, cloudprovider.InstanceNotFound) {
			t.Errorf("metadata of gone instance: want InstanceNotFound, got %v", err)
		}
	}
	if _, err := iv2.InstanceExists(e.ctx, node("x", "aws:///i-1")); err == nil {
		t.Error("foreign providerID accepted")
	}
}

func TestInstanceListerOneCallPerPage(t *testing.T) {
	t.Parallel()
	e := newEnvPools(t, 0, netip.MustParsePrefix(fmt.Sprintf("127.%d.0.0/16", 20+rand.IntN(80))))
	for batch := range 2 {
		var reqs []api.CreateInstanceRequest
		for i := range 600 {
			reqs = append(reqs, api.CreateInstanceRequest{Name: fmt.Sprintf("n-%d-%d", batch, i), Zone: "z", Region: "r", Type: "t"})
		}
		if _, err := e.admin.BatchCreateInstances(e.ctx, reqs); err != nil {
			t.Fatal(err)
		}
	}
	stopped, _ := e.admin.ListInstances(e.ctx, client.ListOptions{Name: "n-0-7"})
	if _, err := e.admin.StopInstance(e.ctx, stopped.Items[0].ID); err != nil {
		t.Fatal(err)
	}
	gone, _ := e.admin.ListInstances(e.ctx, client.ListOptions{Name: "n-1-7"})
	if _, err := e.admin.DeleteInstance(e.ctx, gone.Items[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.ResetStats(e.ctx); err != nil {
		t.Fatal(err)
	}
	lister, ok := e.cloud.(cloud.InstanceLister)
	if !ok {
		t.Fatal("provider does not implement cloud.InstanceLister")
	}
	all, err := lister.ListInstances(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1199 {
		t.Fatalf("listed %d instances, want 1199 (terminated omitted)", len(all))
	}
	if calls := e.count(t, "ListInstances"); calls != 2 {
		t.Fatalf("%d list calls for 1199 instances, want 2 (pages of 1000)", calls)
	}
	for _, in := range all {
		if in.Name == "n-0-7" && !in.Shutdown {
			t.Fatalf("stopped instance not reported as shutdown: %+v", in)
		}
		if !strings.HasPrefix(in.ProviderID, "localcloud://i-") || in.Metadata.ProviderID != in.ProviderID {
			t.Fatalf("bad entry %+v", in)
		}
	}
}
