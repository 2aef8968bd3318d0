package store

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// now is the clock of every test: records compare equal across a restart
// only if their times survive JSON, which a fixed UTC time shows plainly.
var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const quota = 1000

// smallPools have few enough addresses for a test to exhaust them.
func smallPools() Pools {
	return Pools{
		Internal: netip.MustParsePrefix("10.0.0.0/29"), // 6 usable
		External: netip.MustParsePrefix("10.1.0.0/30"), // 2 usable
		VIP:      netip.MustParsePrefix("10.2.0.0/30"), // 2 usable
	}
}

func open(t *testing.T, dir string, pools Pools) *Store {
	t.Helper()
	s, err := Open(dir, pools)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newStore(t *testing.T) *Store {
	t.Helper()
	return open(t, t.TempDir(), DefaultPools())
}

func mustInstance(t *testing.T, s *Store, r api.CreateInstanceRequest) api.Instance {
	t.Helper()
	out, err := s.CreateInstances([]api.CreateInstanceRequest{r}, quota, now)
	if err != nil {
		t.Fatalf("create instance %s: %v", r.Name, err)
	}
	return out[0]
}

func inst(name string) api.CreateInstanceRequest {
	return api.CreateInstanceRequest{Name: name, Zone: "z1", Region: "r1", Type: "small", Tags: map[string]string{"cluster": "c1"}}
}

func lbReq(name string, backends ...string) api.CreateLoadBalancerRequest {
	return api.CreateLoadBalancerRequest{
		Name: name, Cluster: "c1", Tags: map[string]string{"svc": name},
		LoadBalancerSpec: api.LoadBalancerSpec{
			Listeners: []api.Listener{{Protocol: api.ProtocolTCP, Port: 80, NodePort: 30080}},
			Backends:  backends,
		},
	}
}

func mustLB(t *testing.T, s *Store, r api.CreateLoadBalancerRequest) api.LoadBalancer {
	t.Helper()
	lb, err := s.CreateLB(r, quota, now, now.Add(time.Second), "")
	if err != nil {
		t.Fatalf("create load balancer %s: %v", r.Name, err)
	}
	return lb
}

// wantCode fails unless err is an API error with code and field.
func wantCode(t *testing.T, err error, code api.ErrorCode, field string) {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) {
		t.Fatalf("got %v, want a %s error on %s", err, code, field)
	}
	if ae.Code != code || ae.Field != field {
		t.Fatalf("got %s on %q (%s), want %s on %q", ae.Code, ae.Field, ae.Message, code, field)
	}
}

func names[T any](items []T, name func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = name(it)
	}
	return out
}

func instName(i api.Instance) string    { return i.Name }
func lbName(lb api.LoadBalancer) string { return lb.Name }
func routeName(r api.Route) string      { return r.Name }
func equal[T any](t *testing.T, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestKnobs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, DefaultPools())
	if _, ok, err := s.Knobs(); ok || err != nil {
		t.Fatalf("new store has knobs: ok=%v err=%v", ok, err)
	}
	k := api.DefaultKnobs()
	k.Quotas.Instances = 7
	if err := s.SaveKnobs(k); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Knobs()
	if !ok || err != nil {
		t.Fatalf("Knobs after save: ok=%v err=%v", ok, err)
	}
	equal(t, got, k)
}

func TestWatchGeneration(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	gen, changed := s.InstanceGeneration()
	if gen == 0 {
		t.Fatal("generation 0 is current: a watch after 0 would wait")
	}
	a := mustInstance(t, s, inst("a"))
	select {
	case <-changed:
	default:
		t.Fatal("creating an instance did not close the change channel")
	}
	gen2, changed2 := s.InstanceGeneration()
	if gen2 <= gen {
		t.Fatalf("generation %d after a create, was %d", gen2, gen)
	}
	// Load balancers and routes are not what a watcher of machines sees.
	mustLB(t, s, lbReq("web", a.ID))
	select {
	case <-changed2:
		t.Fatal("a load balancer changed the instance generation")
	default:
	}
	b := mustInstance(t, s, api.CreateInstanceRequest{Name: "b", Tags: map[string]string{"cluster": "c2"}})
	if _, err := s.SetInstanceState(b.ID, api.InstanceTerminated); err != nil {
		t.Fatal(err)
	}
	g, items := s.SnapshotInstances(map[string]string{"cluster": "c2"})
	if g2, _ := s.InstanceGeneration(); g != g2 || len(items) != 1 || items[0].State != api.InstanceTerminated {
		t.Fatalf("snapshot at %d (current %d): %+v, want the terminated b only", g, g2, items)
	}
}
