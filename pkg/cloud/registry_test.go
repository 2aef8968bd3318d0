package cloud_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

func TestRegistryFallsBackToUpstreamGlobalRegistry(t *testing.T) {
	t.Parallel()
	const name = "stratus-test-global-registry"
	cloudprovider.RegisterCloudProvider(name, func(io.Reader) (cloudprovider.Interface, error) {
		return &fake.Cloud{Name: "stub"}, nil
	})
	reg := cloud.NewRegistry()
	p, err := reg.Build(t.Context(), cloud.Inputs{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if p.ProviderName() != "stub" {
		t.Errorf("got provider %q", p.ProviderName())
	}
	_, err = reg.Build(t.Context(), cloud.Inputs{Name: "no-such-provider"})
	if !errors.Is(err, cloud.ErrUnknownProvider) || !strings.Contains(err.Error(), "no-such-provider") {
		t.Errorf("unknown provider: %v", err)
	}
}

func TestRegistryPrefersOwnEntries(t *testing.T) {
	t.Parallel()
	reg := cloud.NewRegistry()
	called := false
	if err := reg.Register("mine", func(io.Reader) (cloudprovider.Interface, error) {
		called = true
		return &fake.Cloud{Name: "stub"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register("mine", func(io.Reader) (cloudprovider.Interface, error) { return nil, nil }); err == nil {
		t.Error("duplicate registration accepted")
	}
	if _, err := reg.Build(t.Context(), cloud.Inputs{Name: "mine"}); err != nil || !called {
		t.Fatalf("Build = %v, called = %v", err, called)
	}
}
