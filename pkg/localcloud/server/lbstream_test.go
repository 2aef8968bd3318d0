package server_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// EachLoadBalancer hands over every load balancer of a listing that spans
// several pages, each once and whole, as ListAllLoadBalancers returns them;
// an error from the callback ends the listing and is returned.
func TestEachLoadBalancerStreamsEveryPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	n1, n2 := e.instance("n1"), e.instance("n2")
	for i := range 5 {
		if _, err := e.c.CreateLoadBalancer(e.ctx, lbRequest(fmt.Sprintf("lb-%d", i), n1.ID, n2.ID)); err != nil {
			t.Fatal(err)
		}
	}
	opts := client.ListOptions{Cluster: "c1", MaxResults: 2}
	want, err := e.c.ListAllLoadBalancers(e.ctx, opts)
	if err != nil || len(want) != 5 {
		t.Fatalf("list all: %v, %d load balancers", err, len(want))
	}
	var got []api.LoadBalancer
	if err := e.c.EachLoadBalancer(e.ctx, opts, func(lb *api.LoadBalancer) error {
		got = append(got, *lb)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("streamed %d load balancers over pages of 2, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Name != w.Name || g.Tags[api.TagServiceUID] != w.Tags[api.TagServiceUID] ||
			!slices.Equal(g.Backends, w.Backends) || len(g.Listeners) != 1 || g.VIP != w.VIP {
			t.Errorf("item %d: streamed %+v, listed %+v", i, g, w)
		}
	}
	stop := errors.New("enough")
	calls := 0
	err = e.c.EachLoadBalancer(e.ctx, opts, func(*api.LoadBalancer) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("callback error: got %v after %d calls, want it returned after 1", err, calls)
	}
	// An empty listing calls nothing.
	if err := e.c.EachLoadBalancer(e.ctx, client.ListOptions{Cluster: "none"}, func(*api.LoadBalancer) error {
		t.Error("called for an empty listing")
		return nil
	}); err != nil {
		t.Error(err)
	}
}
