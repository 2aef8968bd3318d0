package server_test

import (
	"errors"
	"net/netip"
	"sync"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

func TestExternalAddressAttachDetach(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	inst := e.instance("node-1")
	if inst.Addresses.External != "" {
		t.Fatalf("instance created without External has external address %s", inst.Addresses.External)
	}
	got, err := e.c.AttachExternalAddress(e.ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	ext := got.Addresses.External
	if !e.cfg.Pools.External.Contains(parse(t, ext)) {
		t.Fatalf("external address %q not from the pool %s", ext, e.cfg.Pools.External)
	}
	if got.Addresses.Internal != inst.Addresses.Internal || got.Addresses.Hostname != "node-1" || got.State != api.InstanceRunning {
		t.Fatalf("attach changed more than the external address: %+v, was %+v", got, inst)
	}
	if read, _ := e.c.GetInstance(e.ctx, inst.ID); read.Addresses.External != ext {
		t.Fatalf("get after attach: external %q, want %s", read.Addresses.External, ext)
	}
	// A second attach is a conflict naming the field and changes nothing.
	if _, err := e.c.AttachExternalAddress(e.ctx, inst.ID); !errors.Is(err, client.ErrConflict) || fieldOf(err) != "addresses.external" {
		t.Fatalf("repeated attach: want ErrConflict on addresses.external, got %v", err)
	}
	if read, _ := e.c.GetInstance(e.ctx, inst.ID); read.Addresses.External != ext {
		t.Fatalf("failed attach changed the address to %q", read.Addresses.External)
	}

	got, err = e.c.DetachExternalAddress(e.ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Addresses.External != "" || got.Addresses.Internal != inst.Addresses.Internal {
		t.Fatalf("after detach: %+v", got.Addresses)
	}
	if _, err := e.c.DetachExternalAddress(e.ctx, inst.ID); !errors.Is(err, client.ErrNotFound) || fieldOf(err) != "addresses.external" {
		t.Fatalf("repeated detach: want ErrNotFound on addresses.external, got %v", err)
	}
	// A stopped instance can take one, as in real clouds.
	if _, err := e.c.StopInstance(e.ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := e.c.AttachExternalAddress(e.ctx, inst.ID); err != nil || got.Addresses.External == "" || got.State != api.InstanceStopped {
		t.Fatalf("attach to a stopped instance: %v %+v", err, got)
	}
	if s := e.stats(); s.Count("AttachExternalAddress") != 3 || s.Count("DetachExternalAddress") != 2 ||
		s.Operations["AttachExternalAddress"].ByCode["409"] != 1 || s.Operations["DetachExternalAddress"].ByCode["404"] != 1 {
		t.Fatalf("counters: %+v", s.Operations)
	}
}

func TestExternalAddressBadRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	gone := e.instance("gone")
	if _, err := e.c.AttachExternalAddress(e.ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.DeleteInstance(e.ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	bare := e.instance("bare")
	before, _ := e.c.GetInstance(e.ctx, gone.ID)
	for _, tc := range []struct {
		name, method, path string
		code               int
		field              string
	}{
		{"attach bad id", "POST", "/v1/instances/nope/externalAddress", 400, "id"},
		{"attach lb id", "POST", "/v1/instances/lb-0000000000000000/externalAddress", 400, "id"},
		{"attach unknown id", "POST", "/v1/instances/i-0000000000000000/externalAddress", 404, "id"},
		{"detach unknown id", "DELETE", "/v1/instances/i-0000000000000000/externalAddress", 404, "id"},
		{"attach terminated", "POST", "/v1/instances/" + gone.ID + "/externalAddress", 409, "state"},
		{"detach terminated", "DELETE", "/v1/instances/" + gone.ID + "/externalAddress", 409, "state"},
		{"detach none", "DELETE", "/v1/instances/" + bare.ID + "/externalAddress", 404, "addresses.external"},
		{"wrong method", "GET", "/v1/instances/" + bare.ID + "/externalAddress", 404, "path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := e.raw(tc.method, tc.path, "")
			if code != tc.code || body.Field != tc.field || body.Message == "" {
				t.Fatalf("got %d %+v, want %d field %q", code, body, tc.code, tc.field)
			}
		})
	}
	// Nothing was written: the terminated record is as it was, the bare
	// instance still has no external address.
	if after, _ := e.c.GetInstance(e.ctx, gone.ID); after.State != api.InstanceTerminated || after.Addresses != before.Addresses {
		t.Fatalf("terminated instance changed: %+v, was %+v", after, before)
	}
	if after, _ := e.c.GetInstance(e.ctx, bare.ID); after.Addresses.External != "" {
		t.Fatalf("bare instance got %s", after.Addresses.External)
	}
}

// TestExternalAddressPoolAndRestart uses a pool of two addresses: the
// third attach fails with QuotaExceeded, allocations and releases survive
// a restart, and a released address is handed out again.
func TestExternalAddressPoolAndRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	// Pools are configuration, not state: restarting with a smaller
	// external pool is how an operator would shrink it too.
	e.cfg.Pools.External = netip.MustParsePrefix("127.2.255.0/30") // .1 and .2 usable
	e.restart()
	a, b, c := e.instance("a"), e.instance("b"), e.instance("c")
	attach := func(id string) string {
		t.Helper()
		inst, err := e.c.AttachExternalAddress(e.ctx, id)
		if err != nil {
			t.Fatalf("attach %s: %v", id, err)
		}
		return inst.Addresses.External
	}
	extA := attach(a.ID)

	e.restart()
	if got, _ := e.c.GetInstance(e.ctx, a.ID); got.Addresses.External != extA {
		t.Fatalf("after restart a has %q, want %s", got.Addresses.External, extA)
	}
	// The reloaded allocator knows extA is taken.
	if extB := attach(b.ID); extB == extA {
		t.Fatalf("address %s given twice after restart", extA)
	}
	if _, err := e.c.AttachExternalAddress(e.ctx, c.ID); !errors.Is(err, client.ErrQuotaExceeded) || fieldOf(err) != "externalAddresses" {
		t.Fatalf("exhausted pool: want ErrQuotaExceeded on externalAddresses, got %v", err)
	}
	if got, _ := e.c.GetInstance(e.ctx, c.ID); got.Addresses.External != "" {
		t.Fatalf("failed attach left %q on c", got.Addresses.External)
	}
	if _, err := e.c.DetachExternalAddress(e.ctx, a.ID); err != nil {
		t.Fatal(err)
	}

	e.restart()
	if got, _ := e.c.GetInstance(e.ctx, a.ID); got.Addresses.External != "" {
		t.Fatalf("detach did not persist: a has %q", got.Addresses.External)
	}
	if extC := attach(c.ID); extC != extA {
		t.Fatalf("c got %s, want the released %s", extC, extA)
	}
	// Terminating an instance releases its external address as well.
	if _, err := e.c.DeleteInstance(e.ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if extA2 := attach(a.ID); extA2 != extA {
		t.Fatalf("a got %s, want %s released by terminating c", extA2, extA)
	}
}

func TestExternalAddressConcurrentAttach(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	one := e.instance("one")
	var others []*api.Instance
	for _, n := range []string{"o1", "o2", "o3", "o4"} {
		others = append(others, e.instance(n))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, conflict := 0, 0
	addrs := map[string]string{}
	for range 8 {
		wg.Go(func() {
			_, err := e.c.AttachExternalAddress(e.ctx, one.ID)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, client.ErrConflict):
				conflict++
			default:
				t.Errorf("attach: %v", err)
			}
		})
	}
	for _, o := range others {
		wg.Go(func() {
			inst, err := e.c.AttachExternalAddress(e.ctx, o.ID)
			if err != nil {
				t.Errorf("attach %s: %v", o.Name, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			addrs[inst.Addresses.External] = inst.Name
		})
	}
	wg.Wait()
	if ok != 1 || conflict != 7 {
		t.Fatalf("same instance: %d attached, %d conflicts; want 1 and 7", ok, conflict)
	}
	got, _ := e.c.GetInstance(e.ctx, one.ID)
	if holder, dup := addrs[got.Addresses.External]; dup || len(addrs) != len(others) {
		t.Fatalf("external addresses not unique: %v, and %s on %q too (%q)", addrs, got.Addresses.External, one.Name, holder)
	}
}

// fieldOf returns the field an API error names.
func fieldOf(err error) string {
	var ae *client.APIError
	if errors.As(err, &ae) {
		return ae.Field
	}
	return ""
}
