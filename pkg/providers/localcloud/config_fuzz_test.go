package localcloud_test

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// FuzzParseConfig feeds arbitrary --cloud-config files to the parser: it
// must never panic, every error must say it is about the cloud config,
// and an accepted config must be within bounds and read back the same
// when written out again.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"url: http://127.0.0.1:8787\ntoken: x\n",
		"[global]\nurl = \"https://cloud:1\"\ntokenFile = /t\nclusterName = c\n",
		"url: http://a:1\ntoken: x\nrateLimitQPS: 2.5\nrateLimitBurst: 3\nmaxRetries: 0\n",
		"url: http://a:1\ntoken: x\nipFamilies: IPv6, IPv4\nkubeProxyHealthPort: 10256\n",
		"url: http://a:1\ntoken: x\nrateLimitQPS: NaN\n",
		"url: http://a:1\ntoken: x\ntoken: y\n",
		"url: http://a:1 # comment\ntoken: 'x'\nrateLimitQPS: 1e-300\n",
		"zone: a\nnot a line\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		cfg, err := lcprovider.ParseConfig(strings.NewReader(in))
		if err != nil {
			if !strings.Contains(err.Error(), "cloud config") {
				t.Fatalf("error does not say where: %v", err)
			}
			return
		}
		if math.IsNaN(cfg.RateLimitQPS) || cfg.RateLimitQPS < 0 || cfg.RateLimitQPS > lcprovider.MaxRateLimitQPS {
			t.Fatalf("rateLimitQPS %v accepted", cfg.RateLimitQPS)
		}
		if cfg.RateLimitBurst < 0 || cfg.RateLimitBurst > lcprovider.MaxRateLimitBurst ||
			cfg.MaxRetries < -1 || cfg.MaxRetries > lcprovider.MaxMaxRetries {
			t.Fatalf("out of bounds accepted: %+v", cfg)
		}
		if cfg.URL == "" || (cfg.Token == "" && cfg.TokenFile == "") || cfg.ClusterName == "" {
			t.Fatalf("incomplete config accepted: %+v", cfg)
		}
		if strings.ContainsAny(cfg.URL+cfg.Token+cfg.TokenFile+cfg.ClusterName, "#\n\"'") {
			return // not representable in the format; nothing to round-trip
		}
		again, err := lcprovider.ParseConfig(strings.NewReader(render(cfg)))
		if err != nil || !reflect.DeepEqual(again, cfg) {
			t.Fatalf("round trip of %+v: %+v, %v", cfg, again, err)
		}
	})
}

func render(c lcprovider.Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "url: %s\nclusterName: %s\n", c.URL, c.ClusterName)
	if c.Token != "" {
		fmt.Fprintf(&b, "token: %s\n", c.Token)
	}
	if c.TokenFile != "" {
		fmt.Fprintf(&b, "tokenFile: %s\n", c.TokenFile)
	}
	if c.MaxRetries >= 0 {
		fmt.Fprintf(&b, "maxRetries: %d\n", c.MaxRetries)
	}
	fmt.Fprintf(&b, "rateLimitQPS: %s\n", fmt.Sprint(c.RateLimitQPS))
	if c.RateLimitBurst > 0 {
		fmt.Fprintf(&b, "rateLimitBurst: %d\n", c.RateLimitBurst)
	}
	if c.KubeProxyHealthPort > 0 {
		fmt.Fprintf(&b, "kubeProxyHealthPort: %d\n", c.KubeProxyHealthPort)
	}
	if len(c.IPFamilies) > 0 {
		var fams []string
		for _, f := range c.IPFamilies {
			fams = append(fams, string(f))
		}
		fmt.Fprintf(&b, "ipFamilies: %s\n", strings.Join(fams, ","))
	}
	return b.String()
}
