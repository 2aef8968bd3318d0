package api_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// strictDecode reads a body the way the server does: unknown fields and
// trailing data are errors.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// checkValidation asserts the properties every request validation has:
// an error is an InvalidArgument (or Conflict) *api.Error naming a field
// in its message, and an accepted body survives a JSON round trip and is
// still accepted.
func checkValidation[T any](t *testing.T, data []byte, validate func(*T) error) {
	t.Helper()
	var req T
	if strictDecode(data, &req) != nil {
		return // the server answers decoding errors itself
	}
	err := validate(&req)
	if err != nil {
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Field == "" || !strings.Contains(ae.Error(), ae.Field) {
			t.Fatalf("error does not name a field: %#v", err)
		}
		if ae.Code != api.CodeInvalidArgument && ae.Code != api.CodeConflict {
			t.Fatalf("validation error with code %s: %v", ae.Code, err)
		}
		return
	}
	out, err := json.Marshal(&req)
	if err != nil {
		t.Fatalf("accepted request does not marshal: %v", err)
	}
	var again T
	if err := strictDecode(out, &again); err != nil {
		t.Fatalf("accepted request %s does not decode: %v", out, err)
	}
	if !reflect.DeepEqual(req, again) {
		t.Fatalf("round trip changed the request:\n%+v\n%+v", req, again)
	}
	if err := validate(&again); err != nil {
		t.Fatalf("accepted request refused after a round trip: %v", err)
	}
}

// FuzzRequestBodies feeds arbitrary JSON bodies to the validation of every
// request the localcloud API accepts, the admin knob patch included.
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{
		`{"name":"n1","zone":"z1","region":"r1","type":"small","tags":{"a":"b"}}`,
		`{"instances":[{"name":"a","zone":"z","region":"r","type":"t"},{"name":"a","zone":"z","region":"r","type":"t"}]}`,
		`{"name":"lb","cluster":"c","vip":"127.0.100.5","listeners":[{"name":"http","protocol":"TCP","port":80,"nodePort":30000}],"backends":["i-0123456789abcdef"]}`,
		`{"name":"lb","cluster":"c","healthCheck":{"intervalMs":-1,"timeoutMs":99999999999}}`,
		`{"name":"r","destinationCIDR":"10.0.1.0/24","instanceId":"i-0123456789abcdef"}`,
		`{"name":"r","destinationCIDR":"10.0.1.1/24","instanceId":"x"}`,
		`{"listeners":[{"port":0}],"sourceRanges":["::/0"],"udpIdleTimeoutMs":1}`,
		`{"rateLimit":1e-300}`,
		`{"lbProvisioningTime":"2562047h","latency":"-1s"}`,
		`{"rateLimit":5,"rateBurst":0}`,
		`{"errorRate":0.5,"quotas":{"instances":-1,"loadBalancers":3}}`,
		`{"latency":150}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkValidation(t, data, func(r *api.CreateInstanceRequest) error { return r.Validate("") })
		checkValidation(t, data, (*api.BatchCreateInstancesRequest).Validate)
		checkValidation(t, data, (*api.CreateLoadBalancerRequest).Validate)
		checkValidation(t, data, (*api.LoadBalancerSpec).Validate)
		checkValidation(t, data, (*api.CreateRouteRequest).Validate)
		// PUT/PATCH /v1/admin/config: the server applies the patch to its
		// knobs and refuses it unless the result is within bounds.
		checkValidation(t, data, func(p *api.KnobsPatch) error { return api.DefaultKnobs().Apply(*p).Validate() })
	})
}

// FuzzKnobs feeds arbitrary key=value settings to the admin knob parser:
// no panic; every error is an *api.Error naming the key it was about;
// accepted values are within the knob's bounds (Validate passes) and read
// back (Get) to a value that sets the same knobs again.
func FuzzKnobs(f *testing.F) {
	for _, kv := range [][2]string{
		{"latency", "150ms"}, {"rateLimit", "1e-300"}, {"rateLimit", "NaN"}, {"errorRate", "1.5"},
		{"lbProvisioningTime", "2562047h"}, {"ratelimit", "5"}, {"quotas.instances", "-1"},
		{"rateBurst", "9223372036854775807"}, {"lbDeletionTime", " 1s "}, {"quotas.loadBalancers", "3"},
	} {
		f.Add(kv[0], kv[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		named := func(err error) {
			t.Helper()
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Code != api.CodeInvalidArgument || !strings.Contains(err.Error(), ae.Field) {
				t.Fatalf("%s=%q: error names no field: %v", key, value, err)
			}
			if ae.Field != key && ae.Field != "rateBurst" {
				t.Fatalf("%s=%q: error names %q, not the knob: %v", key, value, ae.Field, err)
			}
		}
		var p api.KnobsPatch
		if err := p.Set(key, value); err != nil {
			named(err)
			return
		}
		k := api.DefaultKnobs().Apply(p)
		if err := k.Validate(); err != nil {
			named(err)
			return
		}
		got, err := k.Get(key)
		if err != nil {
			t.Fatalf("%s accepted by Set but not by Get: %v", key, err)
		}
		var p2 api.KnobsPatch
		if err := p2.Set(key, got); err != nil {
			t.Fatalf("%s=%q read back as %q, which Set refuses: %v", key, value, got, err)
		}
		if k2 := api.DefaultKnobs().Apply(p2); k2 != k {
			t.Fatalf("%s=%q: round trip through %q changed the knobs:\n%+v\n%+v", key, value, got, k, k2)
		}
	})
}
