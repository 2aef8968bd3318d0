package conformance_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/conformance"
)

var _ cloud.ModificationLister = (*memCloud)(nil)

// ListModifications reports the cluster's load balancers (by their own
// cluster, whatever the defects), as changed when last written, and every
// route, as changed now: the double keeps no route times, and every route
// it holds was just made by a check.
func (c *memCloud) ListModifications(_ context.Context, cluster string) ([]cloud.Modification, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.call(); err != nil {
		return nil, err
	}
	now := time.Now()
	var out []cloud.Modification
	for _, lb := range c.lbs {
		if lb.cluster == cluster {
			out = append(out, cloud.Modification{Kind: cloud.KindLoadBalancer, Name: lb.name, At: lb.at, By: "mem"})
		}
	}
	for _, r := range c.routes {
		out = append(out, cloud.Modification{Kind: cloud.KindRoute, Name: r.Name, At: now})
	}
	return out, nil
}

// wrongModifications is a memCloud whose ListModifications is broken by
// edit.
type wrongModifications struct {
	*memCloud
	edit func(cluster string, mods []cloud.Modification) []cloud.Modification
}

func (w wrongModifications) ListModifications(ctx context.Context, cluster string) ([]cloud.Modification, error) {
	mods, err := w.memCloud.ListModifications(ctx, cluster)
	return w.edit(cluster, mods), err
}

// TestModificationChecksCatchAWrongLister: a lister that forgets objects,
// dates them an hour back, or reports one cluster's load balancer in
// another fails exactly the modification checks it breaks, saying how.
func TestModificationChecksCatchAWrongLister(t *testing.T) {
	cases := map[string]struct {
		edit func(cluster string, mods []cloud.Modification) []cloud.Modification
		want []string
		says string
	}{
		"forgets everything": {
			edit: func(string, []cloud.Modification) []cloud.Modification { return nil },
			want: []string{"Modifications/CreatedRouteIsReported", "Modifications/EnsuredLoadBalancerIsReported"},
			says: "does not report",
		},
		"an hour late": {
			edit: func(_ string, mods []cloud.Modification) []cloud.Modification {
				for i := range mods {
					mods[i].At = mods[i].At.Add(-time.Hour)
				}
				return mods
			},
			want: []string{"Modifications/CreatedRouteIsReported", "Modifications/EnsuredLoadBalancerIsReported"},
			says: "it was changed between",
		},
		"every cluster's": {
			edit: func(cluster string, mods []cloud.Modification) []cloud.Modification {
				if strings.HasSuffix(cluster, "-other") {
					return append(mods, cloud.Modification{Kind: cloud.KindLoadBalancer, Name: "lb-conformance-uid-1", At: time.Now()})
				}
				return mods
			},
			want: []string{"Modifications/EnsuredLoadBalancerIsReported"},
			says: "that cluster's teardown would refuse",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			mc := newMemCloud(defects{})
			cfg := memConfig(mc)
			cfg.Provider = wrongModifications{memCloud: mc, edit: c.edit}
			rec := newRecorder()
			conformance.RunT(rec, cfg)
			if got := rec.failed(); !slices.Equal(got, c.want) {
				t.Fatalf("failed checks = %v, want %v; messages: %v", got, c.want, rec.root.failures)
			}
			for _, check := range c.want {
				if msg := strings.Join(rec.root.failures[check], "\n"); !strings.Contains(msg, c.says) || !strings.Contains(msg, "Why it matters: ") {
					t.Errorf("%s failed with %q, want it to say %q and why it matters", check, msg, c.says)
				}
			}
		})
	}
}

// TestModificationChecksNeedTheExtension: a provider without the
// extension does not run them, and the report says why.
func TestModificationChecksNeedTheExtension(t *testing.T) {
	rep := conformance.Run(t, conformance.Config{Provider: upstreamFake(true), Instances: memConfig(newMemCloud(defects{})).Instances[:1]})
	for _, c := range []string{"Modifications/EnsuredLoadBalancerIsReported", "Modifications/CreatedRouteIsReported"} {
		if why := rep.NotRun[c]; !strings.Contains(why, "cloud.ModificationLister") {
			t.Errorf("%s: not run because %q, want the missing extension named", c, why)
		}
	}
}
