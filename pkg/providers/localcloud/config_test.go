package localcloud_test

import (
	"strings"
	"testing"

	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// TestConfigRefusesTokenAndTokenFile: a config that sets both credentials
// is refused, naming both keys, instead of the literal token silently
// winning over the file an operator may be rotating. The literal token is
// not echoed; either key alone is accepted.
func TestConfigRefusesTokenAndTokenFile(t *testing.T) {
	t.Parallel()
	for _, cfg := range []string{
		"url: http://127.0.0.1:1\ntoken: s3cret\ntokenFile: /var/run/lc/token\n",
		"[global]\ntokenFile = /var/run/lc/token\nurl = http://127.0.0.1:1\ntoken = s3cret\n",
	} {
		_, err := lcprovider.ParseConfig(strings.NewReader(cfg))
		if err == nil {
			t.Fatalf("%q: accepted", cfg)
		}
		msg := err.Error()
		for _, want := range []string{"token and tokenFile", "/var/run/lc/token", "set only one"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%q: error %q does not say %q", cfg, msg, want)
			}
		}
		if strings.Contains(msg, "s3cret") {
			t.Errorf("error %q echoes the token", msg)
		}
		if _, err := lcprovider.New(strings.NewReader(cfg)); err == nil {
			t.Errorf("%q: New accepted the config", cfg)
		}
	}
	for _, cfg := range []string{
		"url: http://127.0.0.1:1\ntoken: s3cret\n",
		"url: http://127.0.0.1:1\ntokenFile: /var/run/lc/token\n",
	} {
		if _, err := lcprovider.ParseConfig(strings.NewReader(cfg)); err != nil {
			t.Errorf("%q: %v", cfg, err)
		}
	}
}

// TestConfigEndpointTargets: endpointTargets is a boolean, off by default;
// a value that is not one is refused, naming the key.
func TestConfigEndpointTargets(t *testing.T) {
	t.Parallel()
	base := "url: http://127.0.0.1:1\ntoken: t\n"
	for cfg, want := range map[string]bool{base: false, base + "endpointTargets: true\n": true, base + "endpointTargets: false\n": false} {
		c, err := lcprovider.ParseConfig(strings.NewReader(cfg))
		if err != nil || c.EndpointTargets != want {
			t.Errorf("%q: EndpointTargets %v, %v; want %v", cfg, c.EndpointTargets, err, want)
		}
	}
	if _, err := lcprovider.ParseConfig(strings.NewReader(base + "endpointTargets: yes please\n")); err == nil || !strings.Contains(err.Error(), "endpointTargets") {
		t.Errorf("a bad value: %v, want an error naming endpointTargets", err)
	}
}
