package app

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/internal/app/options"
)

func lease(holder string, renewed time.Time, seconds int32) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cloud-controller-manager", UID: "lease-uid"}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	if !renewed.IsZero() {
		l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(renewed))
	}
	if seconds > 0 {
		l.Spec.LeaseDurationSeconds = ptr.To(seconds)
	}
	return l
}

// TestWarnsWhenAnotherHoldsTheLease: a replica started without leader
// election finds the Lease held and renewed within its duration by
// another identity: it warns, once, with a Warning event on the Lease
// naming the holder and its renew time. A Lease that is absent, released,
// expired or held by this host's previous process draws no warning.
func TestWarnsWhenAnotherHoldsTheLease(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	_, ctx := ktesting.NewTestContext(t)

	cs := fake.NewClientset(lease("ccm-0_2f1c", now.Add(-3*time.Second), 15))
	if !checkLeaseHeld(ctx, cs, "kube-system", "cloud-controller-manager", clk, "ccm-1") {
		t.Fatal("no warning while another replica holds the Lease")
	}
	evs, err := cs.CoreV1().Events("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil || len(evs.Items) != 1 {
		t.Fatalf("events %v %v, want one", evs, err)
	}
	ev := evs.Items[0]
	if ev.Type != "Warning" || ev.Reason != ReasonLeaseHeldWithoutElection || ev.InvolvedObject.Kind != "Lease" ||
		ev.InvolvedObject.Name != "cloud-controller-manager" || ev.InvolvedObject.UID != "lease-uid" || ev.Source.Component != options.UserAgent {
		t.Errorf("event %+v", ev)
	}
	for _, want := range []string{"--leader-elect=false", "ccm-0_2f1c", "kube-system/cloud-controller-manager", "2026-03-01T11:59:57Z", "15s"} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("event message %q does not say %q", ev.Message, want)
		}
	}

	for name, l := range map[string]*coordinationv1.Lease{
		"released":          lease("", now.Add(-time.Second), 15),
		"expired":           lease("ccm-0_2f1c", now.Add(-15*time.Second), 15),
		"never renewed":     lease("ccm-0_2f1c", time.Time{}, 15),
		"previous process":  lease("ccm-1_9a0b", now.Add(-time.Second), 15),
		"no lease duration": lease("ccm-0_2f1c", now.Add(-time.Second), 0),
	} {
		cs := fake.NewClientset(l)
		if checkLeaseHeld(ctx, cs, "kube-system", "cloud-controller-manager", clk, "ccm-1") {
			t.Errorf("%s: warned", name)
		}
		if evs, _ := cs.CoreV1().Events("kube-system").List(ctx, metav1.ListOptions{}); len(evs.Items) != 0 {
			t.Errorf("%s: events %v", name, evs.Items)
		}
	}
	if checkLeaseHeld(ctx, fake.NewClientset(), "kube-system", "cloud-controller-manager", clk, "ccm-1") {
		t.Error("warned without a Lease")
	}
}

// TestLeaseCheckOnlyWithoutElection: the daemon's call reads the Lease
// named by the flags only with leader election off; with it on (the
// replica campaigns for the Lease) or in observe mode (dry runs beside a
// leader by design) it makes no request. A Lease it cannot read does not
// fail the start.
func TestLeaseCheckOnlyWithoutElection(t *testing.T) {
	t.Parallel()
	_, ctx := ktesting.NewTestContext(t)
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL}
	for _, o := range []*options.Options{
		{LeaderElect: true, LeaderElectNamespace: "ns", LeaderElectName: "l"},
		{Observe: true, LeaderElectNamespace: "ns", LeaderElectName: "l"},
		{LeaderElectNamespace: "ns", LeaderElectName: "l"},
	} {
		warnIfLeaseHeld(ctx, o, cfg)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"GET /apis/coordination.k8s.io/v1/namespaces/ns/leases/l"}; !slices.Equal(paths, want) {
		t.Errorf("requests %q, want %q", paths, want)
	}
}
