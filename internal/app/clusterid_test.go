package app

import (
	"io"
	"testing"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// A provider without a cluster ID starts, with or without
// --allow-untagged-cloud, as under upstream's app (DigitalOcean's reports
// none, and its published arguments do not set the flag).
func TestProviderWithoutClusterIDStarts(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{false, true} {
		_, ctx := ktesting.NewTestContext(t)
		reg := cloud.NewRegistry()
		if err := reg.Register("untagged", func(_ io.Reader) (cloudprovider.Interface, error) {
			return untagged{&fake.Cloud{Provider: "untagged"}}, nil
		}); err != nil {
			t.Fatal(err)
		}
		o := &options.Options{CloudProvider: "untagged", AllowUntaggedCloud: allow}
		p, err := newProvider(ctx, o, reg, nil, cloud.Inputs{})
		if err != nil || p == nil || p.HasClusterID() {
			t.Fatalf("--allow-untagged-cloud=%v: provider %v, HasClusterID %v, err %v; want it built", allow, p, p != nil && p.HasClusterID(), err)
		}
	}
}

// untagged is upstream's fake reporting no cluster ID, as DigitalOcean's
// provider does.
type untagged struct{ *fake.Cloud }

func (untagged) HasClusterID() bool { return false }
