package sandbox

import (
	"strings"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
)

// A resumed sandbox keeps quotas set at runtime that fit --nodes, and
// raises, saying so, those that do not.
func TestFitQuotasKeepsWhatFitsAndRaisesWhatDoesNot(t *testing.T) {
	k := api.DefaultKnobs()
	k.Quotas.Instances, k.Quotas.RoutesPerCluster, k.Quotas.LoadBalancers = 600, 4, 3
	srv, err := server.New(server.Config{StateDir: t.TempDir(), Token: "t", Knobs: &k})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cloud, err := lcclient.New(srv.URL(), "t")
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	s := &sandbox{o: Options{Nodes: 4}, out: out, cloud: cloud}
	got, err := s.fitQuotas(t.Context(), &k)
	if err != nil {
		t.Fatal(err)
	}
	if got.Quotas != k.Quotas || out.String() != "" {
		t.Fatalf("quotas that fit --nodes=4 changed: %+v (were %+v); said %q", got.Quotas, k.Quotas, out.String())
	}
	s.o.Nodes = 700
	if got, err = s.fitQuotas(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	want := api.Quotas{Instances: 10000, RoutesPerCluster: 710, LoadBalancers: 3}
	if got.Quotas != want {
		t.Fatalf("quotas after --nodes=700: %+v, want %+v", got.Quotas, want)
	}
	if saved, err := cloud.Config(t.Context()); err != nil || saved.Quotas != want {
		t.Fatalf("localcloud's quotas: %+v, %v; want %+v", saved, err, want)
	}
	if !strings.Contains(out.String(), "quotas.instances 600 -> 10000") || !strings.Contains(out.String(), "quotas.routesPerCluster 4 -> 710") {
		t.Fatalf("no line says which quotas were raised: %q", out.String())
	}
}
