package harness

import (
	"strings"
	"testing"

	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

func TestProviderConfigPacesOnlyWhenAsked(t *testing.T) {
	paced := ProviderConfig("http://127.0.0.1:1", "/tok", CloudKnobs{RateLimit: 50, ClientQPS: 50, ClientBurst: 5})
	cfg, err := lcprovider.ParseConfig(strings.NewReader(paced))
	if err != nil {
		t.Fatalf("the provider rejects the config: %v\n%s", err, paced)
	}
	if cfg.RateLimitQPS != 50 || cfg.RateLimitBurst != 5 || cfg.ClusterName != ClusterName {
		t.Fatalf("parsed %+v from\n%s", cfg, paced)
	}
	ideal := ProviderConfig("http://127.0.0.1:1", "/tok", CloudKnobs{})
	cfg, err = lcprovider.ParseConfig(strings.NewReader(ideal))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RateLimitQPS != 0 || strings.Contains(ideal, "rateLimit") {
		t.Fatalf("unpaced config paces:\n%s", ideal)
	}
}
