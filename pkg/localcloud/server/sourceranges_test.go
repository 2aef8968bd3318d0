package server_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// TestLoadBalancerSourceRangesOfNoVIPFamily: source ranges without an
// IPv4 range would let no client reach the IPv4 VIP, so create and update
// refuse them with an invalid-argument error whose text (what the provider
// wraps, and the service controller's event and condition quote) names
// the field and the list; the refused update leaves the load balancer's
// ranges as they were. A list with one IPv4 range is accepted.
func TestLoadBalancerSourceRangesOfNoVIPFamily(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	n1 := e.instance("n1")

	req := lbRequest("v6only", n1.ID)
	req.SourceRanges = []string{"::/0"}
	_, err := e.c.CreateLoadBalancer(e.ctx, req)
	wantRefused(t, "create", err)

	req = lbRequest("mixed", n1.ID)
	req.SourceRanges = []string{"10.0.0.0/8", "::/0"}
	lb, err := e.c.CreateLoadBalancer(e.ctx, req)
	if err != nil {
		t.Fatalf("create with an IPv4 range among IPv6 ones: %v", err)
	}
	spec := lb.LoadBalancerSpec
	spec.SourceRanges = []string{"::/0"}
	_, err = e.c.UpdateLoadBalancer(e.ctx, lb.ID, spec)
	wantRefused(t, "update", err)
	got, err := e.c.GetLoadBalancer(e.ctx, lb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.SourceRanges, lb.SourceRanges) {
		t.Errorf("refused update changed sourceRanges to %q, want %q", got.SourceRanges, lb.SourceRanges)
	}
}

func wantRefused(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("%s with sourceRanges [::/0]: err = %v, want invalid argument", what, err)
	}
	for _, want := range []string{"sourceRanges", `"::/0"`, "no range of the load balancer's families [IPv4]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not name %s", what, err, want)
		}
	}
}
