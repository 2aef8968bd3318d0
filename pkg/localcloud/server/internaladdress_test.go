package server_test

import (
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// An instance may ask for its internal address (a real node's address is
// its network namespace's); an address held by a live instance is refused
// naming the field, and is free again once its holder is deleted.
func TestInstanceInternalAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	req := api.CreateInstanceRequest{Name: "real-0", Zone: "z", Region: "r", Type: "t", InternalAddress: "10.250.0.10"}
	inst, err := e.c.CreateInstance(e.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Addresses.Internal != "10.250.0.10" {
		t.Fatalf("internal address %q, want 10.250.0.10", inst.Addresses.Internal)
	}
	for _, tc := range []struct {
		name, body string
		code       int
		field      string
	}{
		{"held", `{"name":"real-1","zone":"z","region":"r","type":"t","internalAddress":"10.250.0.10"}`, 409, "internalAddress"},
		{"not an address", `{"name":"real-1","zone":"z","region":"r","type":"t","internalAddress":"10.250.0"}`, 400, "internalAddress"},
		{"unspecified", `{"name":"real-1","zone":"z","region":"r","type":"t","internalAddress":"0.0.0.0"}`, 400, "internalAddress"},
		{"batch item", `{"instances":[{"name":"b","zone":"z","region":"r","type":"t","internalAddress":"x"}]}`, 400, "instances[0].internalAddress"},
	} {
		path := "/v1/instances"
		if tc.name == "batch item" {
			path = "/v1/instances:batchCreate"
		}
		code, body := e.raw("POST", path, tc.body)
		if code != tc.code || body.Field != tc.field {
			t.Errorf("%s: got %d %+v, want %d field %q", tc.name, code, body, tc.code, tc.field)
		}
	}
	if _, err := e.c.DeleteInstance(e.ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	req.Name = "real-1"
	if _, err := e.c.CreateInstance(e.ctx, req); err != nil {
		t.Fatalf("the address of a deleted instance: %v", err)
	}
}

// A dual-stack instance holds an IPv6 address beside its IPv4 one, refused
// like the IPv4 one while a live instance holds it, and the provider's view
// of it (through the API) carries both.
func TestInstanceInternalAddress6(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	req := api.CreateInstanceRequest{Name: "real-0", Zone: "z", Region: "r", Type: "t", InternalAddress: "10.250.0.10", InternalAddress6: "fd00:5354:0:0::10"}
	inst, err := e.c.CreateInstance(e.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Addresses.Internal != "10.250.0.10" || inst.Addresses.Internal6 != "fd00:5354::10" {
		t.Fatalf("addresses %+v", inst.Addresses)
	}
	for _, tc := range []struct {
		name, body string
		code       int
		field      string
	}{
		{"held", `{"name":"real-1","zone":"z","region":"r","type":"t","internalAddress6":"fd00:5354::10"}`, 409, "internalAddress6"},
		{"IPv4", `{"name":"real-1","zone":"z","region":"r","type":"t","internalAddress6":"10.0.0.1"}`, 400, "internalAddress6"},
		{"mapped", `{"name":"real-1","zone":"z","region":"r","type":"t","internalAddress6":"::ffff:10.0.0.1"}`, 400, "internalAddress6"},
		{"link-local", `{"name":"real-1","zone":"z","region":"r","type":"t","internalAddress6":"fe80::1"}`, 400, "internalAddress6"},
		{"two IPv6", `{"name":"real-1","zone":"z","region":"r","type":"t","internalAddress":"fd00::1","internalAddress6":"fd00::2"}`, 400, "internalAddress"},
	} {
		code, body := e.raw("POST", "/v1/instances", tc.body)
		if code != tc.code || body.Field != tc.field {
			t.Errorf("%s: got %d %+v, want %d field %q", tc.name, code, body, tc.code, tc.field)
		}
	}
	if _, err := e.c.DeleteInstance(e.ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	req.Name = "real-1"
	if _, err := e.c.CreateInstance(e.ctx, req); err != nil {
		t.Fatalf("the addresses of a deleted instance: %v", err)
	}
}
