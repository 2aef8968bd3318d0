package route

import (
	"testing"

	"github.com/stratus-ccm/stratus/internal/ownership"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// TestForeignNodesNotRouted: under an ownership policy for the lc
// platform, a Node of another platform with a pod CIDR gets no route and
// no NetworkUnavailable condition, and a route the table holds for it (made
// before the policy) is removed as no owned Node accounts for it.
func TestForeignNodesNotRouted(t *testing.T) {
	pol, err := ownership.New([]string{"lc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cloud := cloudfake.New()
	f := newFixture(t, cloud, Config{},
		node("a", "lc://a", "10.244.0.0/24"),
		node("onprem", "onprem://rack1/onprem", "10.244.1.0/24"),
	)
	f.c.ownership = pol
	f.mustSync()
	f.wantRoutes("10.244.0.0/24→a")
	if c := f.condition("onprem"); c != nil {
		t.Errorf("foreign node's NetworkUnavailable written: %+v", c)
	}
	// Without the policy the same Node is routed, as upstream routes it.
	f.c.ownership = ownership.Policy{}
	f.mustSync()
	f.wantRoutes("10.244.0.0/24→a 10.244.1.0/24→onprem")
	f.c.ownership = pol
	f.mustSync()
	f.wantRoutes("10.244.0.0/24→a")
}
