package sandbox

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidateNamesFlagKnobAndValue(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Options)
		want   string
	}{
		{func(o *Options) { o.RateLimit = 1e-300 }, "--rate-limit: rateLimit: 1e-300 is out of range"},
		{func(o *Options) { o.ErrorRate = 2 }, "--error-rate: errorRate: 2 is out of range"},
		{func(o *Options) { o.LBProvisioningTime = 2562047 * time.Hour }, "--lb-provisioning-time: lbProvisioningTime: 2562047h0m0s is out of range"},
		{func(o *Options) { o.Latency = -time.Second }, "--latency: latency: -1s is out of range"},
		{func(o *Options) { o.VIPPool = "127.0.101.0" }, "--vip-pool=127.0.101.0"},
		{func(o *Options) { o.InternalPool = "::1/128" }, "--internal-pool=::1/128"},
		{func(o *Options) { o.Nodes = 0 }, "--nodes=0"},
		{func(o *Options) { o.IPFamily = "ipv6" }, "--ip-family=ipv6: want ipv4 or dual"},
		{func(o *Options) { o.IPFamily = IPFamilyDual }, "--ip-family=dual: needs real nodes only"},
		{func(o *Options) { o.IPFamily, o.Nodes, o.RealNodes, o.VIPPool = IPFamilyDual, 0, 2, "10.1.0.0/24" }, "(no --vip-pool)"},
	} {
		o := DefaultOptions()
		tc.mutate(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want %q, got %v", tc.want, err)
		}
	}
	o := DefaultOptions()
	o.VIPPool = "127.0.101.0/24"
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults with a VIP pool: %v", err)
	}
}

// Dual-stack by default with real nodes only on their slot's VIP pools,
// IPv4 otherwise; --ip-family says so either way.
func TestDualStackByDefaultWithRealNodesOnly(t *testing.T) {
	for _, tc := range []struct {
		family          string
		nodes, real     int
		vipPool         string
		dual, validates bool
	}{
		{IPFamilyAuto, 0, 2, "", true, true},
		{IPFamilyAuto, 3, 2, "", false, true},
		{IPFamilyAuto, 0, 2, "10.9.0.0/24", false, true},
		{IPFamilyAuto, 3, 0, "", false, true},
		{IPFamilyIPv4, 0, 2, "", false, true},
		{IPFamilyDual, 0, 2, "", true, true},
		{IPFamilyDual, 0, AutoRealNodes, "", true, false}, // --nodes=0 needs a number of real nodes
		{IPFamilyDual, 1, 2, "", true, false},
	} {
		o := DefaultOptions()
		o.IPFamily, o.Nodes, o.RealNodes, o.VIPPool = tc.family, tc.nodes, tc.real, tc.vipPool
		if got := o.dualStack(); got != tc.dual {
			t.Errorf("%+v: dual-stack %v, want %v", tc, got, tc.dual)
		}
		if err := o.Validate(); (err == nil) != tc.validates {
			t.Errorf("%+v: Validate = %v", tc, err)
		}
	}
	s := &sandbox{o: DefaultOptions(), dual: true}
	if got := s.serviceCIDRs(); got != "10.0.0.0/24,fd00:5354:ff::/112" {
		t.Errorf("service CIDRs %s", got)
	}
	if got := s.clusterCIDRs(); got != "10.64.0.0/10,fd00:5354:fe::/56" {
		t.Errorf("cluster CIDRs %s", got)
	}
}

func TestKnobArgsOnlyTheFlagsGiven(t *testing.T) {
	o := DefaultOptions()
	o.ErrorRate = 0.1
	o.KnobsSet = map[string]bool{"error-rate": true}
	if got := o.knobArgs(); !slices.Equal(got, []string{"--error-rate=0.1"}) {
		t.Fatalf("knob args %v", got)
	}
	o.KnobsSet = nil
	if got := o.knobArgs(); len(got) != len(KnobFlags()) {
		t.Fatalf("without KnobsSet every knob is passed: %v", got)
	}
}
