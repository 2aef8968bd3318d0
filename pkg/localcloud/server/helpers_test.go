package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// testPools claims a /24 for internal addresses and one for VIPs so that
// tests running in parallel (here and in other packages) do not collide.
func testPools(t testing.TB) store.Pools {
	return store.Pools{
		Internal: testbed.InstancePool(t),
		External: netip.MustParsePrefix("127.2.0.0/16"),
		VIP:      testbed.VIPPool(t),
	}
}

type env struct {
	t     *testing.T
	ctx   context.Context
	dir   string
	cfg   server.Config
	srv   *server.Server
	c     *client.Client
	token string
}

func newEnv(t *testing.T, mutate func(*api.Knobs)) *env {
	t.Helper()
	k := api.DefaultKnobs()
	k.LBProvisioningTime = 0
	k.LBDeletionTime = 0
	if mutate != nil {
		mutate(&k)
	}
	e := &env{t: t, dir: t.TempDir()}
	e.cfg = server.Config{StateDir: e.dir, Knobs: &k, Pools: testPools(t)}
	_, e.ctx = ktesting.NewTestContext(t)
	e.start()
	t.Cleanup(func() { _ = e.srv.Close() })
	return e
}

func (e *env) start() {
	e.t.Helper()
	srv, err := server.New(e.cfg)
	if err != nil {
		e.t.Fatalf("server.New: %v", err)
	}
	if err := srv.Start(e.ctx); err != nil {
		e.t.Fatalf("Start: %v", err)
	}
	e.srv = srv
	e.token = srv.Token()
	e.c, err = client.New(srv.URL(), srv.Token(), client.WithMaxRetries(0))
	if err != nil {
		e.t.Fatalf("client.New: %v", err)
	}
}

// restart stops the server and opens the same state dir again.
func (e *env) restart() {
	e.t.Helper()
	if err := e.srv.Close(); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	e.cfg.Token = e.token
	e.start()
}

// raw sends a request with an arbitrary body and returns status and error body.
func (e *env) raw(method, path, body string) (int, api.ErrorBody) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, method, e.srv.URL()+path, bytes.NewBufferString(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, _ := io.ReadAll(resp.Body)
	var eb api.ErrorResponse
	if resp.StatusCode >= 300 {
		if err := json.Unmarshal(data, &eb); err != nil {
			e.t.Fatalf("%s %s: error body is not JSON: %q", method, path, data)
		}
	}
	return resp.StatusCode, eb.Error
}

func (e *env) instance(name string) *api.Instance {
	e.t.Helper()
	inst, err := e.c.CreateInstance(e.ctx, api.CreateInstanceRequest{Name: name, Zone: "zone-a", Region: "region-1", Type: "small"})
	if err != nil {
		e.t.Fatalf("create instance: %v", err)
	}
	return inst
}

func (e *env) stats() *api.Stats {
	e.t.Helper()
	s, err := e.c.Stats(e.ctx)
	if err != nil {
		e.t.Fatalf("stats: %v", err)
	}
	return s
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 15*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s: %v", what, err)
	}
}

func parse(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatalf("address %q: %v", s, err)
	}
	return a
}
