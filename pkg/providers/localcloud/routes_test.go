package localcloud_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// Creating routes for many nodes must not cost a name lookup per route:
// one list fills the provider's name index.
func TestCreateRoutesShareOneInstanceList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Millisecond)
	const n = 40
	var reqs []api.CreateInstanceRequest
	for i := range n {
		reqs = append(reqs, api.CreateInstanceRequest{Name: fmt.Sprintf("rn-%02d", i), Zone: "zone-a", Region: "region-1", Type: "small"})
	}
	if _, err := e.admin.BatchCreateInstances(e.ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.UpdateConfig(e.ctx, api.KnobsPatch{Quotas: &api.QuotasPatch{RoutesPerCluster: ptr(100)}}); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.ResetStats(e.ctx); err != nil {
		t.Fatal(err)
	}
	rt, _ := e.cloud.Routes()
	for i := range n {
		r := &cloudprovider.Route{TargetNode: types.NodeName(fmt.Sprintf("rn-%02d", i)), DestinationCIDR: fmt.Sprintf("10.9.%d.0/24", i)}
		if err := rt.CreateRoute(e.ctx, "kubernetes", fmt.Sprintf("uid-%d", i), r); err != nil {
			t.Fatalf("route %d: %v", i, err)
		}
	}
	if got := e.count(t, "ListInstances"); got != 1 {
		t.Errorf("ListInstances calls for %d routes = %d, want 1", n, got)
	}
	if got := e.count(t, "CreateRoute"); got != n {
		t.Errorf("CreateRoute calls = %d, want %d", got, n)
	}
	// An unknown node is InstanceNotFound after one refresh, not a guess.
	err := rt.CreateRoute(e.ctx, "kubernetes", "uid-x", &cloudprovider.Route{TargetNode: "nope", DestinationCIDR: "10.9.200.0/24"})
	if err == nil {
		t.Fatal("route to an unknown node created")
	}
}

func ptr[T any](v T) *T { return &v }

// With rateLimitQPS below the cloud's limit, concurrent provider calls that
// each make several requests never draw a 429.
func TestRateLimitConfigPacesRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Millisecond)
	for i := range 3 {
		e.instance(t, fmt.Sprintf("paced-%d", i))
	}
	if _, err := e.admin.UpdateConfig(e.ctx, api.KnobsPatch{RateLimit: ptr(20.0), RateBurst: ptr(2)}); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("url: %s\ntoken: %s\nrateLimitQPS: 10\nrateLimitBurst: 1\nmaxRetries: 0\n", e.srv.URL(), e.srv.Token())
	paced, err := lcprovider.New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.admin.ResetStats(e.ctx); err != nil {
		t.Fatal(err)
	}
	in, _ := paced.InstancesV2()
	errs := make(chan error, 15)
	for i := range 15 {
		go func() {
			_, err := in.InstanceMetadata(e.ctx, node(fmt.Sprintf("paced-%d", i%3), ""))
			errs <- err
		}()
	}
	for range 15 {
		if err := <-errs; err != nil {
			t.Errorf("paced call failed: %v", err)
		}
	}
	st, err := e.admin.Stats(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for op, s := range st.Operations {
		if n := s.ByCode["429"]; n > 0 {
			t.Errorf("%s drew %d 429 answers despite client pacing", op, n)
		}
	}
}

// A full route table is reported as cloud.ErrQuotaExceeded, so that the
// route controller counts it without knowing this provider's errors.
func TestCreateRouteQuotaIsCloudQuotaError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Millisecond)
	e.instance(t, "quota-0")
	if _, err := e.admin.UpdateConfig(e.ctx, api.KnobsPatch{Quotas: &api.QuotasPatch{RoutesPerCluster: ptr(1)}}); err != nil {
		t.Fatal(err)
	}
	rt, _ := e.cloud.Routes()
	if err := rt.CreateRoute(e.ctx, "kubernetes", "uid-q0", &cloudprovider.Route{TargetNode: "quota-0", DestinationCIDR: "10.8.0.0/24"}); err != nil {
		t.Fatal(err)
	}
	err := rt.CreateRoute(e.ctx, "kubernetes", "uid-q1", &cloudprovider.Route{TargetNode: "quota-0", DestinationCIDR: "10.8.1.0/24"})
	if !errors.Is(err, cloud.ErrQuotaExceeded) {
		t.Fatalf("second route in a table of one: err = %v, want cloud.ErrQuotaExceeded", err)
	}
	if !errors.Is(err, lcclient.ErrQuotaExceeded) {
		t.Errorf("err = %v no longer carries the cloud's own error", err)
	}
	// Other failures are not quota errors.
	err = rt.CreateRoute(e.ctx, "kubernetes", "uid-q2", &cloudprovider.Route{TargetNode: "nope", DestinationCIDR: "10.8.2.0/24"})
	if err == nil || errors.Is(err, cloud.ErrQuotaExceeded) {
		t.Errorf("route to an unknown node: err = %v, want an error that is not a quota error", err)
	}
}
