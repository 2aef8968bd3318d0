package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// Two replicas as a Deployment runs them: both become Ready (the standby
// too, since its caches are synced and its lease requests succeed), and
// exactly one of them leads.
func TestStandbyIsReady(t *testing.T) {
	env := sharedEnv(t)
	bin := buildFakeCCM(t)
	ctx := testbed.Context(t, 2*time.Minute)
	const lease = "standby-test"
	ports := []int{testbed.FreePort(t), testbed.FreePort(t)}
	pids := map[int]int{}
	for i, port := range ports {
		p := startCCM(t, bin, env, []string{"a", "b"}[i], port, "--leader-elect-resource-name="+lease)
		pids[p.Pid()] = port
	}
	var leader int
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		leader = pidOf(initializedBy(ctx, env.Clientset))
		_, ok := pids[leader]
		return ok, nil
	}); err != nil {
		t.Fatalf("neither replica initialized the provider: %v", err)
	}
	for pid, port := range pids {
		waitReady(ctx, t, port)
		code, body := httpsGet(ctx, port, "/readyz?verbose", "")
		if code != http.StatusOK || !strings.Contains(body, "[+]leader-election ok") {
			t.Errorf("replica %d (leader=%v): /readyz = %d\n%s", pid, pid == leader, code, body)
		}
		if code, body := httpsGet(ctx, port, "/healthz", ""); code != http.StatusOK {
			t.Errorf("replica %d: /healthz = %d %s", pid, code, body)
		}
	}
	l, err := env.Clientset.CoordinationV1().Leases("kube-system").Get(ctx, lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		t.Fatalf("lease %s has no holder: %v", lease, err)
	}
}
