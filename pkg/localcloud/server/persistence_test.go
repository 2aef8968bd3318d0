package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
)

func TestPersistenceAcrossRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	a := e.instance("a")
	stopped := e.instance("stopped")
	if _, err := e.c.StopInstance(e.ctx, stopped.ID); err != nil {
		t.Fatal(err)
	}
	ta := startTCPBackend(t, a.Addresses.Internal, 0, "a")
	active, err := e.c.CreateLoadBalancer(e.ctx, api.CreateLoadBalancerRequest{
		Name: "active", Cluster: "c1",
		LoadBalancerSpec: api.LoadBalancerSpec{
			Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: lbPort, NodePort: ta.port()}},
			Backends:  []string{a.ID}, HealthCheck: fastHC,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	slow := api.Duration(400 * time.Millisecond)
	if _, err := e.c.UpdateConfig(e.ctx, api.KnobsPatch{LBProvisioningTime: &slow}); err != nil {
		t.Fatal(err)
	}
	pending, err := e.c.CreateLoadBalancer(e.ctx, api.CreateLoadBalancerRequest{
		Name: "pending", Cluster: "c1",
		LoadBalancerSpec: api.LoadBalancerSpec{
			Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: lbPort, NodePort: ta.port()}},
			Backends:  []string{a.ID}, HealthCheck: fastHC,
		},
	})
	if err != nil || pending.Status != api.LBProvisioning {
		t.Fatalf("pending: %v %+v", err, pending)
	}
	if _, err := e.c.CreateRoute(e.ctx, "c1", api.CreateRouteRequest{Name: "r1", DestinationCIDR: "10.244.0.0/24", InstanceID: a.ID}); err != nil {
		t.Fatal(err)
	}

	e.restart()
	// The VIP was released on shutdown and is bound again by the new server.
	c, err := dialLB(active.VIP, lbPort, "")
	if err != nil || c.backend != "a" {
		t.Fatalf("active load balancer does not forward after restart: %v", err)
	}
	_ = c.Close()
	got, err := e.c.GetInstance(e.ctx, stopped.ID)
	if err != nil || got.State != api.InstanceStopped {
		t.Fatalf("stopped instance after restart: %v %+v", err, got)
	}
	all, _ := e.c.ListAllInstances(e.ctx, client.ListOptions{})
	if len(all) != 2 {
		t.Fatalf("instances after restart: %d", len(all))
	}
	routes, _ := e.c.ListRoutes(e.ctx, "c1")
	if len(routes) != 1 || routes[0].InstanceName != "a" {
		t.Fatalf("routes after restart: %+v", routes)
	}
	// The provisioning timer resumes from its stored deadline.
	waitFor(t, "pending load balancer active after restart", func() bool {
		lb, err := e.c.GetLoadBalancer(e.ctx, pending.ID)
		return err == nil && lb.Status == api.LBActive
	})
	// New instances do not reuse live addresses.
	n := e.instance("new")
	if n.Addresses.Internal == a.Addresses.Internal || n.Addresses.Internal == stopped.Addresses.Internal {
		t.Fatalf("address reused after restart: %s", n.Addresses.Internal)
	}
}

func TestGeneratedToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := server.New(server.Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, server.TokenFileName))
	if err != nil || strings.TrimSpace(string(data)) != srv.Token() || len(srv.Token()) < 32 {
		t.Fatalf("token file: %v %q", err, data)
	}
	_ = srv.Close()
	again, err := server.New(server.Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = again.Close() }()
	if again.Token() != srv.Token() {
		t.Fatal("token changed across restart")
	}
	if _, err := server.New(server.Config{StateDir: t.TempDir(), TokenFile: filepath.Join(dir, "missing")}); err == nil {
		t.Fatal("missing token file accepted")
	}
	k := api.DefaultKnobs()
	k.Latency = api.Duration(-time.Second)
	if _, err := server.New(server.Config{StateDir: t.TempDir(), Knobs: &k}); err == nil || !strings.Contains(err.Error(), "latency") {
		t.Fatalf("negative latency: %v", err)
	}
}
