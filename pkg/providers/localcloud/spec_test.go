package localcloud

import (
	"reflect"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// TestSpecComparisonCoversEveryField fails when a field of the load
// balancer spec is left out of the comparison: a sync would then never
// write a change of it, and a plan never show one.
func TestSpecComparisonCoversEveryField(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[api.LoadBalancerSpec]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		var want api.LoadBalancerSpec
		v := reflect.ValueOf(&want).Elem().Field(i)
		switch v.Kind() {
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 1, 1))
			if f.Type.Elem().Kind() == reflect.String {
				v.Index(0).SetString("x")
			}
		case reflect.String:
			v.SetString("x")
		case reflect.Int:
			v.SetInt(1)
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Struct:
			// The first field of a nested struct (the health check's port).
			setFirst(t, v)
		default:
			t.Fatalf("field %s: kind %s: teach this test to change it", f.Name, v.Kind())
		}
		if specEqual(api.LoadBalancerSpec{}, want) || len(specChanges(api.LoadBalancerSpec{}, want)) == 0 {
			t.Errorf("a change of %s is not seen", f.Name)
		}
	}
}

func setFirst(t *testing.T, v reflect.Value) {
	t.Helper()
	switch f := v.Field(0); f.Kind() {
	case reflect.Int:
		f.SetInt(1)
	case reflect.String:
		f.SetString("x")
	default:
		t.Fatalf("%s: teach this test to change a %s", v.Type(), f.Kind())
	}
}

func TestSpecEqualIgnoresOrderNotRepeats(t *testing.T) {
	t.Parallel()
	a := api.LoadBalancerSpec{Backends: []string{"i-1", "i-2"}, SourceRanges: []string{"10.0.0.0/8", "192.168.0.0/16"}}
	b := api.LoadBalancerSpec{Backends: []string{"i-2", "i-1"}, SourceRanges: []string{"192.168.0.0/16", "10.0.0.0/8"}}
	if !specEqual(a, b) {
		t.Fatalf("order is a change: %v", specChanges(a, b))
	}
	b.Backends = append(b.Backends, "i-1")
	if got := specChanges(a, b); len(got) != 1 || got[0] != "backends: +[i-1] -[]" {
		t.Fatalf("a repeated backend: %q", got)
	}
}

// TestSpecChangesOfEndpoints: endpoints are compared per listener without
// their order, and a change of conditions is a change.
func TestSpecChangesOfEndpoints(t *testing.T) {
	t.Parallel()
	ep := func(addr string, ready bool) api.Endpoint {
		return api.Endpoint{Address: addr, Port: 8080, Ready: ready, Serving: true, Terminating: !ready}
	}
	spec := func(eps ...api.Endpoint) api.LoadBalancerSpec {
		return api.LoadBalancerSpec{Targets: api.TargetsEndpoints, Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: 80, Endpoints: eps}}}
	}
	a := spec(ep("10.64.1.5", true), ep("10.64.1.6", true))
	if !specEqual(a, spec(ep("10.64.1.6", true), ep("10.64.1.5", true))) {
		t.Fatal("order is a change")
	}
	got := specChanges(a, spec(ep("10.64.1.5", true), ep("10.64.1.6", false), ep("10.64.1.7", true)))
	want := "endpoints TCP/80: +[10.64.1.6:8080 serving terminating,10.64.1.7:8080 ready] -[10.64.1.6:8080 ready]"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("changes = %q, want [%q]", got, want)
	}
	nodes := api.LoadBalancerSpec{Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: 80, NodePort: 30080}}}
	if got := specChanges(nodes, a); len(got) != 3 || got[1] != "targets: instances → endpoints" {
		t.Fatalf("node targets to endpoints: %q", got)
	}
}
