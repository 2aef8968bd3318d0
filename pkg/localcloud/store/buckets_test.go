package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

func TestInstances(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), smallPools())

	out, err := s.CreateInstances([]api.CreateInstanceRequest{inst("a"), inst("b"), {Name: "c", External: true}}, 3, now)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := out[0], out[1], out[2]
	if a.State != api.InstanceRunning || a.Addresses.Internal == "" || a.Addresses.Hostname != "a" || !a.CreatedAt.Equal(now) {
		t.Fatalf("new instance: %+v", a)
	}
	if a.Addresses.Internal == b.Addresses.Internal || c.Addresses.External == "" {
		t.Fatalf("addresses: a %+v b %+v c %+v", a.Addresses, b.Addresses, c.Addresses)
	}
	checkGet(t, s.GetInstance, b.ID, b, "i-0000000000000000")

	// The batch is checked whole: quota, then names within and across.
	_, err = s.CreateInstances([]api.CreateInstanceRequest{inst("d")}, 3, now)
	wantCode(t, err, api.CodeQuotaExceeded, "instances")
	_, err = s.CreateInstances([]api.CreateInstanceRequest{inst("d"), inst("a")}, quota, now)
	wantCode(t, err, api.CodeConflict, "instances[1].name")
	if _, ok := s.instByName["d"]; ok {
		t.Fatal("a refused batch left an instance behind")
	}
	_, err = s.CreateInstances([]api.CreateInstanceRequest{{Name: "e", InternalAddress: a.Addresses.Internal}}, quota, now)
	wantCode(t, err, api.CodeConflict, "internalAddress")
	_, err = s.CreateInstances([]api.CreateInstanceRequest{{Name: "e", InternalAddress: "nope"}}, quota, now)
	wantCode(t, err, api.CodeInvalidArgument, "internalAddress")
	e := mustInstance(t, s, api.CreateInstanceRequest{Name: "e", InternalAddress: "10.9.9.9"})
	if e.Addresses.Internal != "10.9.9.9" {
		t.Fatalf("asked-for address: %+v", e.Addresses)
	}

	// Listing: terminated instances only when asked for, filters, pages.
	if _, err := s.SetInstanceState(b.ID, api.InstanceStopped); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetInstanceState(e.ID, api.InstanceTerminated); err != nil {
		t.Fatal(err)
	}
	list := func(f InstanceFilter) []string {
		t.Helper()
		items, next, err := s.ListInstances(f, "", 0)
		if err != nil || next != "" {
			t.Fatalf("list %+v: next %q err %v", f, next, err)
		}
		return names(items, instName)
	}
	if got := len(list(InstanceFilter{})); got != 3 {
		t.Fatalf("listed %d live instances, want 3", got)
	}
	equal(t, list(InstanceFilter{State: api.InstanceTerminated}), []string{"e"})
	equal(t, list(InstanceFilter{State: api.InstanceStopped}), []string{"b"})
	equal(t, list(InstanceFilter{Name: "a"}), []string{"a"})
	equal(t, list(InstanceFilter{Name: "e"}), []string{})
	equal(t, list(InstanceFilter{Name: "e", State: api.InstanceTerminated}), []string{"e"})
	if got := list(InstanceFilter{Tags: map[string]string{"cluster": "c1"}}); len(got) != 2 {
		t.Fatalf("tag filter: %v", got)
	}
	var paged []string
	for token := ""; ; {
		items, next, err := s.ListInstances(InstanceFilter{}, token, 1)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, names(items, instName)...)
		if next == "" {
			break
		}
		token = next
	}
	if len(paged) != 3 {
		t.Fatalf("pages gave %v", paged)
	}
	_, _, err = s.ListInstances(InstanceFilter{}, "!!", 1)
	wantCode(t, err, api.CodeInvalidArgument, "pageToken")

	// States: repeating is a no-op, terminated is final and frees the
	// name and the addresses.
	if again, err := s.SetInstanceState(b.ID, api.InstanceStopped); err != nil || again.State != api.InstanceStopped {
		t.Fatalf("stop twice: %+v %v", again, err)
	}
	if _, err := s.SetInstanceState(c.ID, api.InstanceTerminated); err != nil {
		t.Fatal(err)
	}
	_, err = s.SetInstanceState(c.ID, api.InstanceRunning)
	wantCode(t, err, api.CodeConflict, "state")
	_, err = s.SetInstanceState("i-0000000000000000", api.InstanceRunning)
	wantCode(t, err, api.CodeNotFound, "id")
	again := mustInstance(t, s, api.CreateInstanceRequest{Name: "c", External: true})
	if again.ID == c.ID || again.Addresses.External == "" {
		t.Fatalf("name and external address of a terminated instance are not free: %+v", again)
	}

	byID := s.InstancesByID([]string{a.ID, c.ID, "i-0000000000000000"})
	if len(byID) != 2 || byID[c.ID].State != api.InstanceTerminated {
		t.Fatalf("InstancesByID: %+v", byID)
	}
}

func TestInternalPoolExhausted(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), smallPools())
	reqs := make([]api.CreateInstanceRequest, 7)
	for i := range reqs {
		reqs[i] = api.CreateInstanceRequest{Name: fmt.Sprintf("n%d", i)}
	}
	_, err := s.CreateInstances(reqs, quota, now)
	wantCode(t, err, api.CodeQuotaExceeded, "internalAddresses")
	if _, err := s.CreateInstances(reqs[:6], quota, now); err != nil {
		t.Fatalf("the pool's 6 addresses: %v", err)
	}
}

func TestExternalAddresses(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), smallPools())
	a := mustInstance(t, s, inst("a"))
	b := mustInstance(t, s, inst("b"))
	c := mustInstance(t, s, inst("c"))

	a2, err := s.AttachExternalAddress(a.ID)
	if err != nil || a2.Addresses.External == "" {
		t.Fatalf("attach: %+v %v", a2, err)
	}
	_, err = s.AttachExternalAddress(a.ID)
	wantCode(t, err, api.CodeConflict, fieldExternal)
	if _, err := s.AttachExternalAddress(b.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.AttachExternalAddress(c.ID)
	wantCode(t, err, api.CodeQuotaExceeded, "externalAddresses")

	a3, err := s.DetachExternalAddress(a.ID)
	if err != nil || a3.Addresses.External != "" {
		t.Fatalf("detach: %+v %v", a3, err)
	}
	_, err = s.DetachExternalAddress(a.ID)
	wantCode(t, err, api.CodeNotFound, fieldExternal)
	c2, err := s.AttachExternalAddress(c.ID)
	if err != nil || c2.Addresses.External != a2.Addresses.External {
		t.Fatalf("the detached address is not free again: %+v %v", c2, err)
	}
	// The internal address is untouched by all of it.
	if got, _ := s.GetInstance(c.ID); got.Addresses.Internal != c.Addresses.Internal {
		t.Fatalf("internal address moved: %+v", got.Addresses)
	}

	if _, err := s.SetInstanceState(b.ID, api.InstanceTerminated); err != nil {
		t.Fatal(err)
	}
	_, err = s.AttachExternalAddress(b.ID)
	wantCode(t, err, api.CodeConflict, "state")
	_, err = s.DetachExternalAddress("i-0000000000000000")
	wantCode(t, err, api.CodeNotFound, "id")
}

func TestLoadBalancers(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), smallPools())
	a := mustInstance(t, s, inst("a"))
	b := mustInstance(t, s, inst("b"))

	web := mustLB(t, s, lbReq("web", a.ID))
	if web.Status != api.LBProvisioning || web.VIP == "" || !web.ReadyAt.Equal(now.Add(time.Second)) || web.Backends[0] != a.ID {
		t.Fatalf("new load balancer: %+v", web)
	}
	empty := mustLB(t, s, lbReq("empty"))
	if empty.Backends == nil {
		t.Fatal("no backends is stored as null: the API promises a list")
	}
	checkGet(t, s.GetLB, web.ID, web, "lb-0000000000000000")

	_, err := s.CreateLB(lbReq("web"), quota, now, now, "")
	wantCode(t, err, api.CodeConflict, "name")
	_, err = s.CreateLB(lbReq("x"), 2, now, now, "")
	wantCode(t, err, api.CodeQuotaExceeded, "loadBalancers")
	_, err = s.CreateLB(lbReq("x", "i-0000000000000000"), quota, now, now, "")
	wantCode(t, err, api.CodeInvalidArgument, "backends[0]")
	_, err = s.CreateLB(lbReq("x"), quota, now, now, "")
	wantCode(t, err, api.CodeQuotaExceeded, "vipAddresses")
	taken := lbReq("x")
	taken.VIP = web.VIP
	_, err = s.CreateLB(taken, quota, now, now, "")
	wantCode(t, err, api.CodeInvalidArgument, "vip")
	taken.VIP = "10.2.0.3" // the pool's last address
	_, err = s.CreateLB(taken, quota, now, now, "")
	wantCode(t, err, api.CodeInvalidArgument, "vip")

	// Listing filters and pages.
	other := lbReq("other")
	other.Cluster = "c2"
	if err := s.RemoveLB(empty.ID); err != nil {
		t.Fatal(err)
	}
	mustLB(t, s, other)
	list := func(f LBFilter, limit int) []string {
		t.Helper()
		var all []string
		for token := ""; ; {
			items, next, err := s.ListLBs(f, token, limit)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, names(items, lbName)...)
			if next == "" {
				return all
			}
			token = next
		}
	}
	if got := list(LBFilter{}, 1); len(got) != 2 {
		t.Fatalf("pages: %v", got)
	}
	equal(t, list(LBFilter{Cluster: "c2"}, 0), []string{"other"})
	equal(t, list(LBFilter{Cluster: "c1", Name: "web"}, 0), []string{"web"})
	equal(t, list(LBFilter{Tags: map[string]string{"svc": "other"}}, 0), []string{"other"})
	if got := list(LBFilter{Name: "empty"}, 0); len(got) != 0 {
		t.Fatalf("a removed load balancer is listed: %v", got)
	}

	// Update replaces the spec and leaves the rest.
	spec := web.LoadBalancerSpec
	spec.Backends = []string{a.ID, b.ID}
	spec.SourceRanges = []string{"10.0.0.0/8"}
	up, err := s.UpdateLB(web.ID, spec, now.Add(time.Minute), "")
	if err != nil || len(up.Backends) != 2 || up.VIP != web.VIP || !up.UpdatedAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("update: %+v %v", up, err)
	}
	spec.Backends[0] = "mutated"
	if got, _ := s.GetLB(web.ID); got.Backends[0] != a.ID {
		t.Fatal("the store kept the caller's slice")
	}
	spec.Backends = []string{"i-0000000000000000"}
	_, err = s.UpdateLB(web.ID, spec, now, "")
	wantCode(t, err, api.CodeInvalidArgument, "backends[0]")
	_, err = s.UpdateLB("lb-0000000000000000", spec, now, "")
	wantCode(t, err, api.CodeNotFound, "id")

	// Status: error and back, deletion final, removal frees the VIP.
	failed, err := s.SetLBError(web.ID, "cannot bind")
	if err != nil || failed.Status != api.LBError || failed.StatusMessage != "cannot bind" {
		t.Fatalf("error: %+v %v", failed, err)
	}
	active, err := s.SetLBStatus(web.ID, api.LBActive, time.Time{})
	if err != nil || active.Status != api.LBActive || active.StatusMessage != "" {
		t.Fatalf("active: %+v %v", active, err)
	}
	if again, err := s.SetLBStatus(web.ID, api.LBActive, now); err != nil || !again.ReadyAt.IsZero() {
		t.Fatalf("a repeated status is not a no-op: %+v %v", again, err)
	}
	if _, err := s.SetLBStatus(web.ID, api.LBDeleting, now); err != nil {
		t.Fatal(err)
	}
	_, err = s.SetLBStatus(web.ID, api.LBActive, now)
	wantCode(t, err, api.CodeConflict, "status")
	_, err = s.SetLBError(web.ID, "late")
	wantCode(t, err, api.CodeConflict, "status")
	_, err = s.UpdateLB(web.ID, web.LoadBalancerSpec, now, "")
	wantCode(t, err, api.CodeConflict, "status")
	if n := len(s.AllLBs()); n != 2 {
		t.Fatalf("AllLBs: %d, want 2", n)
	}
	if err := s.RemoveLB(web.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveLB(web.ID); err != nil {
		t.Fatalf("removing twice: %v", err)
	}
	again := lbReq("web")
	again.VIP = web.VIP
	if _, err := s.CreateLB(again, quota, now, now, ""); err != nil {
		t.Fatalf("name and VIP of a removed load balancer are not free: %v", err)
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	a := mustInstance(t, s, inst("a"))
	b := mustInstance(t, s, inst("b"))
	route := func(name, cidr, id string) api.CreateRouteRequest {
		return api.CreateRouteRequest{Name: name, DestinationCIDR: cidr, InstanceID: id}
	}

	r, err := s.CreateRoute("c1", route("r2", "10.244.1.0/24", b.ID), 3, now, "")
	if err != nil || r.State != api.RouteActive || r.InstanceName != "b" || r.Cluster != "c1" {
		t.Fatalf("create: %+v %v", r, err)
	}
	if _, err := s.CreateRoute("c1", route("r1", "10.244.0.0/24", a.ID), 3, now, ""); err != nil {
		t.Fatal(err)
	}
	// Another cluster's table is separate: same name, same destination.
	if _, err := s.CreateRoute("c2", route("r1", "10.244.0.0/24", a.ID), 1, now, ""); err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateRoute("c1", route("r1", "10.244.9.0/24", a.ID), 3, now, "")
	wantCode(t, err, api.CodeConflict, "name")
	_, err = s.CreateRoute("c1", route("r3", "10.244.0.0/24", a.ID), 3, now, "")
	wantCode(t, err, api.CodeConflict, "destinationCIDR")
	_, err = s.CreateRoute("c1", route("r3", "bad", a.ID), 3, now, "")
	wantCode(t, err, api.CodeInvalidArgument, "destinationCIDR")
	_, err = s.CreateRoute("c1", route("r3", "10.244.3.0/24", "i-0000000000000000"), 3, now, "")
	wantCode(t, err, api.CodeInvalidArgument, "instanceId")
	_, err = s.CreateRoute("c2", route("r3", "10.244.3.0/24", a.ID), 1, now, "")
	wantCode(t, err, api.CodeQuotaExceeded, "routesPerCluster")

	got := s.ListRoutes("c1")
	equal(t, names(got, routeName), []string{"r1", "r2"})
	if got[0].DestinationCIDR != "10.244.0.0/24" || !got[0].CreatedAt.Equal(now) {
		t.Fatalf("route: %+v", got[0])
	}
	equal(t, s.ListRoutes("none"), []api.Route{})

	// A route to a terminated instance stays, as a blackhole.
	if _, err := s.SetInstanceState(b.ID, api.InstanceTerminated); err != nil {
		t.Fatal(err)
	}
	if got := s.ListRoutes("c1")[1]; got.State != api.RouteBlackhole || got.InstanceName != "b" {
		t.Fatalf("route to a terminated instance: %+v", got)
	}

	if err := s.DeleteRoute("c1", "r1"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.DeleteRoute("c1", "r1"), api.CodeNotFound, "name")
	equal(t, names(s.ListRoutes("c1"), routeName), []string{"r2"})
	equal(t, names(s.ListRoutes("c2"), routeName), []string{"r1"})
	if _, err := s.CreateRoute("c1", route("r1", "10.244.0.0/24", a.ID), 3, now, ""); err != nil {
		t.Fatalf("name and destination of a deleted route are not free: %v", err)
	}
}

// checkGet fails unless get returns want for id, and the not-found error
// for unknown.
func checkGet[T any](t *testing.T, get func(string) (T, error), id string, want T, unknown string) {
	t.Helper()
	got, err := get(id)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, got, want)
	_, err = get(unknown)
	wantCode(t, err, api.CodeNotFound, "id")
}
