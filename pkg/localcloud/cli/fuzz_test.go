package cli

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
)

// FuzzConfigSetArgs feeds arbitrary arguments (NUL-separated) to
// `localcloud config set`: no panic; a refusal names the argument it
// refused; an accepted set either passes the bounds the server checks or
// fails them naming one of the knobs given; and what is accepted reads
// back (config get) as values that set the same knobs again.
func FuzzConfigSetArgs(f *testing.F) {
	for _, seed := range []string{
		"errorRate=0.1\x00latency=50ms", "quotas.loadBalancers=2\x00lbProvisioningTime=30s",
		"errorRate=0\x00latency=0s", "=5", "rateLimit", "latency==1s", "rateLimit=1e-300",
		"errorRate=NaN", "ratelimit=5", "rateBurst=0\x00rateLimit=5", "quotas.instances=3\x00quotas.instances=-1",
		"lbDeletionTime= 2s ", "rateBurst=0x10",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		p, err := parseKnobArgs(args)
		if err != nil {
			msg := err.Error()
			if !slices.ContainsFunc(args, func(a string) bool {
				return strings.HasPrefix(msg, strconv.Quote(a)+":") || strings.HasPrefix(msg, a+": ")
			}) {
				t.Fatalf("%q: error names none of the arguments: %v", args, err)
			}
			return
		}
		keys := make([]string, len(args))
		for i, a := range args {
			keys[i], _, _ = strings.Cut(a, "=")
		}
		k := api.DefaultKnobs().Apply(p)
		if err := k.Validate(); err != nil {
			var ae *api.Error
			if !errors.As(err, &ae) || (!slices.Contains(keys, ae.Field) && ae.Field != "rateBurst") {
				t.Fatalf("%q: the server's refusal names no knob given: %v", args, err)
			}
			return
		}
		var again api.KnobsPatch
		for _, key := range keys {
			v, err := k.Get(key)
			if err != nil {
				t.Fatalf("%q: %s accepted by set, refused by get: %v", args, key, err)
			}
			if err := again.Set(key, v); err != nil {
				t.Fatalf("%q: %s read back as %q, which set refuses: %v", args, key, v, err)
			}
		}
		if k2 := api.DefaultKnobs().Apply(again); k2 != k {
			t.Fatalf("%q: read back and set again changed the knobs:\n%+v\n%+v", args, k, k2)
		}
	})
}

// FuzzServeKnobFlags feeds an arbitrary value to each knob flag of
// `localcloud serve`: no panic; a refusal (by the flag parser or by the
// knob's bounds) names the flag; an accepted value starts a cloud whose
// knobs, flags and overrides applied, are within bounds.
func FuzzServeKnobFlags(f *testing.F) {
	for _, kv := range [][2]string{
		{"rateLimit", "1e-300"}, {"lbProvisioningTime", "2562047h"}, {"errorRate", "1.5"},
		{"rateBurst", "010"}, {"rateBurst", "0x10"}, {"latency", "-1s"}, {"quotas.instances", "1000001"},
		{"rateLimit", "NaN"}, {"errorRate", "0.25"}, {"lbDeletionTime", "1h"},
	} {
		f.Add(kv[0], kv[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		flag := api.KnobFlag(key)
		if flag == "" {
			return
		}
		o := &serveOptions{}
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		o.addFlags(fs, api.DefaultKnobs(), store.DefaultPools())
		if err := fs.Parse([]string{"--state-dir=unused", "--" + flag + "=" + value}); err != nil {
			if !strings.Contains(err.Error(), "--"+flag) {
				t.Fatalf("--%s=%q: parse error names no flag: %v", flag, value, err)
			}
			return
		}
		o.changed = fs.Changed
		o.value = func(name string) string { return fs.Lookup(name).Value.String() }
		cfg, err := o.config("")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--"+flag+": ") && !strings.HasPrefix(err.Error(), "--rate-burst: ") {
				t.Fatalf("--%s=%q: error names no flag: %v", flag, value, err)
			}
			return
		}
		if err := cfg.Knobs.Apply(*cfg.KnobOverrides).Validate(); err != nil {
			t.Fatalf("--%s=%q accepted, but the cloud would start with knobs out of bounds: %v", flag, value, err)
		}
	})
}
