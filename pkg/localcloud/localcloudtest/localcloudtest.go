// Package localcloudtest starts a real localcloud for a test. It is apart
// from pkg/testbed so that provider authors' tests, which import the test
// bed, do not link localcloud's server and store.
package localcloudtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// Localcloud is a real localcloud on 127.0.0.1 for one test, with load
// balancers that provision and delete at once, its admin client, and a
// provider config file (url and tokenFile) for --cloud-config.
type Localcloud struct {
	Server *server.Server
	Admin  *client.Client
	// ConfigFile is the localcloud provider's config for this cloud.
	ConfigFile string
}

// Start starts a localcloud in a temporary state directory,
// with this test's instance and VIP pools, stopped when the test ends.
func Start(t testing.TB) *Localcloud {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	k := api.DefaultKnobs()
	k.LBProvisioningTime, k.LBDeletionTime = 0, 0
	dir := t.TempDir()
	srv, err := server.New(server.Config{StateDir: dir, Knobs: &k, Pools: store.Pools{Internal: testbed.InstancePool(t), VIP: testbed.VIPPool(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	admin, err := client.New(srv.URL(), srv.Token())
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "cloud.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "url: %s\ntokenFile: %s\n", srv.URL(), filepath.Join(dir, server.TokenFileName)), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Localcloud{Server: srv, Admin: admin, ConfigFile: conf}
}
