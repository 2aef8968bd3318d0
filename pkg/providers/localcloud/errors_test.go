package localcloud_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratus-ccm/stratus/internal/cloudwrap"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// An error passes the client, the provider and the instrumented wrapper;
// each adds only what it knows, so no part of the message repeats.
func TestErrorsSayEachThingOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	a := e.instance(t, "a")
	cfg := fmt.Sprintf("url: %s\ntoken: %s\nclusterName: kubernetes\nmaxRetries: 0\n", e.srv.URL(), e.srv.Token())
	p, err := lcprovider.New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloudwrap.Instrument(p, cloudwrap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := 1.0
	if _, err := e.admin.UpdateConfig(e.ctx, api.KnobsPatch{ErrorRate: &all}); err != nil {
		t.Fatal(err)
	}
	lister, _ := c.InstanceLister()
	inst, _ := c.InstancesV2()
	lbs, _ := c.LoadBalancer()
	n := node("a", "localcloud://"+a.ID)
	svc := service(30080, corev1.ProtocolTCP)
	calls := map[string]func() error{
		"ListInstances":    func() error { _, err := lister.ListInstances(e.ctx); return err },
		"InstanceMetadata": func() error { _, err := inst.InstanceMetadata(e.ctx, n); return err },
		"EnsureLoadBalancer": func() error {
			_, err := lbs.EnsureLoadBalancer(e.ctx, "kubernetes", svc, []*corev1.Node{n})
			return err
		},
	}
	for op, call := range calls {
		err := call()
		if err == nil {
			t.Fatalf("%s: no error with every cloud call failing", op)
		}
		msg := err.Error()
		if got := strings.Count(msg, "localcloud"); got != 1 {
			t.Errorf("%s: %q names localcloud %d times, want once", op, msg, got)
		}
		seen := map[string]bool{}
		for _, part := range strings.Split(msg, ": ") {
			key := strings.ToLower(strings.ReplaceAll(part, " ", ""))
			if seen[key] {
				t.Errorf("%s: %q repeats %q", op, msg, part)
			}
			seen[key] = true
		}
		if !strings.HasPrefix(msg, "cloud "+op+": ") || !strings.Contains(msg, "HTTP 503") {
			t.Errorf("%s: %q lacks the operation or the cloud's answer", op, msg)
		}
	}
}
