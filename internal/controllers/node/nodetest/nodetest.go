// Package nodetest is the integration test bed of the node controllers and
// their benchmark: a real API server (pkg/testbed), an in-process
// localcloud behind the real localcloud provider, and a controller-runtime
// manager configured as the daemon configures its own.
package nodetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stratus-ccm/stratus/internal/cloudwrap"
	"github.com/stratus-ccm/stratus/internal/controllers/objcache"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// Cloud is a running localcloud with a client and the instrumented
// provider the controllers use.
type Cloud struct {
	Server *server.Server
	// Admin is a client for test setup (creating, stopping instances,
	// knobs, counters).
	Admin *lcclient.Client
	// Provider is the instrumented localcloud provider.
	Provider *cloudwrap.Cloud
}

// StartCloud starts a localcloud on 127.0.0.1 until t ends. maxRetries
// bounds the provider client's retries of 429 answers.
func StartCloud(t testing.TB, knobs *api.Knobs, maxRetries int) *Cloud {
	t.Helper()
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", StateDir: t.TempDir(), Knobs: knobs})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	admin, err := lcclient.New(srv.URL(), srv.Token(), lcclient.WithMaxRetries(10))
	if err != nil {
		t.Fatal(err)
	}
	pc, err := lcclient.New(srv.URL(), srv.Token(), lcclient.WithMaxRetries(maxRetries))
	if err != nil {
		t.Fatal(err)
	}
	p, err := cloudwrap.Instrument(lcprovider.NewWithClient(pc, "kubernetes"), cloudwrap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &Cloud{Server: srv, Admin: admin, Provider: p}
}

// CreateInstances creates running instances named as the nodes will be,
// in batches the API accepts, and returns them by name.
func (c *Cloud) CreateInstances(ctx context.Context, names ...string) (map[string]api.Instance, error) {
	out := make(map[string]api.Instance, len(names))
	for len(names) > 0 {
		n := min(len(names), api.MaxBatchCreate)
		reqs := make([]api.CreateInstanceRequest, 0, n)
		for _, name := range names[:n] {
			reqs = append(reqs, api.CreateInstanceRequest{Name: name, Zone: "zone-a", Region: "region-1", Type: "small", External: true})
		}
		insts, err := c.Admin.BatchCreateInstances(ctx, reqs)
		if err != nil {
			return nil, err
		}
		for _, inst := range insts {
			out[inst.Name] = inst
		}
		names = names[n:]
	}
	return out, nil
}

// Instances returns the provider's InstancesV2 and its instance lister.
func (c *Cloud) Instances(t testing.TB) (cloudprovider.InstancesV2, cloud.InstanceLister) {
	t.Helper()
	in, ok := c.Provider.InstancesV2()
	if !ok {
		t.Fatal("localcloud provider lacks InstancesV2")
	}
	l, ok := c.Provider.InstanceLister()
	if !ok {
		t.Fatal("localcloud provider lacks the instance lister")
	}
	return in, l
}

// NewManager returns a manager set up as the daemon sets up its own (no
// leader election, no servers, managedFields stripped from the cache); it
// runs until t ends.
func NewManager(t testing.TB, cfg *rest.Config) manager.Manager {
	t.Helper()
	opts, err := objcache.ManagerOptions(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("manager did not stop within a minute")
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("manager cache did not sync")
	}
	return mgr
}

// Names returns n node names with a prefix.
func Names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return out
}
