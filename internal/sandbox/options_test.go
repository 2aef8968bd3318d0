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
