package teardown_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/internal/teardown"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// signsOf returns the summary's signs of kind.
func signsOf(s teardown.Summary, kind string) []teardown.Sign {
	var out []teardown.Sign
	for _, sign := range s.SignsOfLife {
		if sign.Kind == kind {
			out = append(out, sign)
		}
	}
	return out
}

// refusedWithNothingDeleted checks that --yes was refused because of the
// signs and left every object of both clusters.
func (w *world) refusedWithNothingDeleted(t *testing.T, s teardown.Summary, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if !s.RefusedAlive || len(s.SignsOfLife) == 0 || s.Counts[teardown.StateDeleted] != 0 {
		t.Fatalf("summary = %+v, want --yes refused for signs of life", s)
	}
	for _, c := range []string{"alpha", "beta"} {
		if lbs, routes := w.owned(t, c); lbs != 2 || routes != 2 {
			t.Errorf("%s after a refused teardown: %d load balancers, %d routes; want all kept", c, lbs, routes)
		}
	}
}

// The world's objects were just made through the provider, as a running
// controller manager makes them: each is a sign of life, named with when
// and by whom, and --yes deletes nothing.
func TestRecentCloudChangesRefuseYes(t *testing.T) {
	w := newWorld(t)
	s, err := teardown.Run(w.ctx, teardown.Options{Cloud: w.cloud, ClusterName: "alpha", Apply: true})
	w.refusedWithNothingDeleted(t, s, err)
	changes := signsOf(s, teardown.SignCloudChange)
	if len(changes) != 4 {
		t.Fatalf("cloud signs = %+v, want the 2 load balancers and 2 routes", changes)
	}
	for _, c := range changes {
		if c.By != lcprovider.UserAgent() || c.At.IsZero() || !strings.Contains(c.Message, c.Object) || !strings.Contains(c.Message, "by "+c.By) {
			t.Errorf("sign %+v: want the object, when, and by %q", c, lcprovider.UserAgent())
		}
		if strings.HasPrefix(c.Object, teardown.KindLoadBalancer) && !strings.Contains(c.Message, "(Service default/") {
			t.Errorf("sign %q does not name the load balancer's Service", c.Message)
		}
	}
	alive := &teardown.AliveError{Summary: s}
	if !errors.Is(alive, teardown.ErrAlive) || alive.ExitCode() != teardown.ExitAlive || !strings.Contains(alive.Error(), changes[0].Message) {
		t.Errorf("AliveError = %v (exit %d), want ErrAlive, exit %d and the first sign", alive, alive.ExitCode(), teardown.ExitAlive)
	}
}

func TestForceDeletesDespiteSigns(t *testing.T) {
	w := newWorld(t)
	s, err := teardown.Run(w.ctx, teardown.Options{Cloud: w.cloud, ClusterName: "alpha", Apply: true, Force: true, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if s.RefusedAlive || !s.Forced || len(s.SignsOfLife) != 4 || s.Counts[teardown.StateDeleted] != 4 {
		t.Fatalf("summary = %+v, want 4 deleted, forced past 4 signs", s)
	}
	if lbs, routes := w.owned(t, "alpha"); lbs != 0 || routes != 0 {
		t.Errorf("alpha after a forced teardown: %d load balancers, %d routes; want none", lbs, routes)
	}
	var out bytes.Buffer
	if err := teardown.Write(&out, s, teardown.OutputText); err != nil || !strings.Contains(out.String(), "--force: despite 4 sign(s) of life") {
		t.Errorf("text = %q, %v; want it to say --force went past the signs", out.String(), err)
	}
}

// A dry run reports the same signs, in text and JSON, and says that --yes
// would be refused.
func TestDryRunReportsSigns(t *testing.T) {
	w := newWorld(t)
	s, err := teardown.Run(w.ctx, teardown.Options{Cloud: w.cloud, ClusterName: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if !s.DryRun || !s.RefusedAlive || len(signsOf(s, teardown.SignCloudChange)) != 4 {
		t.Fatalf("dry run = %+v, want 4 signs and --yes refused", s)
	}
	var text bytes.Buffer
	if err := teardown.Write(&text, s, teardown.OutputText); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--yes would be refused", "--force", s.SignsOfLife[0].Message, "not checked: the cluster's API server (no --kubeconfig)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := teardown.Write(&js, s, teardown.OutputJSON); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RefusedAlive bool             `json:"refusedAlive"`
		ChangeWindow string           `json:"changeWindow"`
		Signs        []map[string]any `json:"signsOfLife"`
		Unchecked    []string         `json:"unchecked"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.RefusedAlive || len(doc.Signs) != 4 || doc.Signs[0]["by"] != lcprovider.UserAgent() || doc.Signs[0]["at"] == nil ||
		doc.ChangeWindow != teardown.DefaultChangeWindow.String() || len(doc.Unchecked) != 1 {
		t.Errorf("JSON = %s", js.String())
	}
}

// Changes older than the window are no sign: the teardown goes on.
func TestOldChangesAreNoSign(t *testing.T) {
	w := newWorld(t)
	s, err := teardown.Run(w.ctx, teardown.Options{Cloud: w.cloud, ClusterName: "alpha", ChangeWindow: time.Minute,
		Now: func() time.Time { return time.Now().Add(2 * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	if s.RefusedAlive || len(s.SignsOfLife) != 0 {
		t.Fatalf("summary = %+v, want no sign for changes older than the window", s)
	}
}

// unmodifiable is a provider without cloud.ModificationLister, with the
// load-balancer list the teardown needs.
type unmodifiable struct {
	cloudprovider.Interface
	cloud.LoadBalancerLister
}

// failingModifications is a provider whose record of changes fails.
type failingModifications struct{ cloudprovider.Interface }

func (failingModifications) ListModifications(context.Context, string) ([]cloud.Modification, error) {
	return nil, errors.New("the cloud is down")
}

func (f failingModifications) ListLoadBalancers(ctx context.Context, c string) ([]cloud.LoadBalancer, error) {
	return f.Interface.(cloud.LoadBalancerLister).ListLoadBalancers(ctx, c)
}

// A provider that cannot tell when its objects changed: the teardown
// says so and relies on the other signs (here none, so it deletes).
func TestProviderWithoutTheExtension(t *testing.T) {
	w := newWorld(t)
	p := unmodifiable{Interface: w.cloud, LoadBalancerLister: w.cloud.(cloud.LoadBalancerLister)}
	s, err := teardown.Run(w.ctx, teardown.Options{Cloud: p, ClusterName: "alpha", Apply: true, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if s.RefusedAlive || s.Counts[teardown.StateDeleted] != 4 || len(s.Unchecked) != 2 || !strings.Contains(s.Unchecked[0], "cloud.ModificationLister") {
		t.Fatalf("summary = %+v, want 4 deleted and the missing extension said", s)
	}
}

// A cloud that cannot say what changed stops the teardown, unless --force.
func TestFailingRecordOfChanges(t *testing.T) {
	w := newWorld(t)
	p := failingModifications{w.cloud}
	if _, err := teardown.Run(w.ctx, teardown.Options{Cloud: p, ClusterName: "alpha", Apply: true}); err == nil || !strings.Contains(err.Error(), "the cloud is down") {
		t.Fatalf("err = %v, want the cloud's error", err)
	}
	if lbs, _ := w.owned(t, "alpha"); lbs != 2 {
		t.Fatalf("alpha has %d load balancers, want both kept", lbs)
	}
	s, err := teardown.Run(w.ctx, teardown.Options{Cloud: p, ClusterName: "alpha", Force: true})
	if err != nil || !strings.Contains(strings.Join(s.Unchecked, "\n"), "the cloud is down") {
		t.Fatalf("forced: %+v, %v; want the failure among what was not checked", s, err)
	}
}

func lease(holder string, renewed time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: teardown.DefaultLeaseNamespace, Name: teardown.DefaultLeaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: renewed}},
	}
}

func lbSvc(ns, name string, class *string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class}}
}

// The cluster's signs, judged an hour after the cloud's last change (so
// that only they count): a Lease renewed within its duration, and
// LoadBalancer Services this controller manager serves.
func TestClusterSigns(t *testing.T) {
	later := time.Now().Add(time.Hour)
	clock := func() time.Time { return later }
	cases := map[string]struct {
		objects []runtime.Object
		lease   string // namespace/name flag, empty for the default
		want    string // kind of the sign, empty for none
		says    string
	}{
		"held lease":        {objects: []runtime.Object{lease("ccm-0_1234", later.Add(-5*time.Second))}, want: teardown.SignLease, says: "held by ccm-0_1234, renewed 5s ago"},
		"expired lease":     {objects: []runtime.Object{lease("ccm-0_1234", later.Add(-time.Minute))}},
		"released lease":    {objects: []runtime.Object{lease("", later)}},
		"lease elsewhere":   {objects: []runtime.Object{lease("ccm-0_1234", later)}, lease: "other/ccm"},
		"no lease":          {},
		"LoadBalancer":      {objects: []runtime.Object{lbSvc("default", "web", nil)}, want: teardown.SignServices, says: "1 Service(s) of type LoadBalancer still exist (default/web)"},
		"another LB class":  {objects: []runtime.Object{lbSvc("default", "web", ptr.To("example.com/lb"))}},
		"ClusterIP Service": {objects: []runtime.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			o := teardown.Options{Cloud: w.cloud, ClusterName: "alpha", Apply: true, Poll: 50 * time.Millisecond, Now: clock, Cluster: fake.NewClientset(c.objects...)}
			if c.lease != "" {
				o.LeaseNamespace, o.LeaseName, _ = strings.Cut(c.lease, "/")
			}
			s, err := teardown.Run(w.ctx, o)
			if c.want == "" {
				if err != nil || s.RefusedAlive || s.Counts[teardown.StateDeleted] != 4 || len(s.Unchecked) != 0 {
					t.Fatalf("summary = %+v, %v; want no sign, nothing unchecked, and 4 deleted", s, err)
				}
				return
			}
			w.refusedWithNothingDeleted(t, s, err)
			if got := signsOf(s, c.want); len(got) != 1 || !strings.Contains(got[0].Message, c.says) {
				t.Fatalf("signs = %+v, want one %s saying %q", s.SignsOfLife, c.want, c.says)
			}
		})
	}
}

// An API server that does not answer is said, and is no sign: the
// teardown goes on.
func TestUnreachableAPIServerIsNoSign(t *testing.T) {
	w := newWorld(t)
	cs := fake.NewClientset()
	cs.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	})
	s, err := teardown.Run(w.ctx, teardown.Options{Cloud: w.cloud, ClusterName: "alpha", Apply: true, Poll: 50 * time.Millisecond, Now: anHourLater, Cluster: cs})
	if err != nil {
		t.Fatal(err)
	}
	if s.RefusedAlive || s.Counts[teardown.StateDeleted] != 4 || len(s.Unchecked) != 2 {
		t.Fatalf("summary = %+v, want 4 deleted and both cluster checks reported", s)
	}
	for _, u := range s.Unchecked {
		if !strings.Contains(u, "did not answer") || !strings.Contains(u, "connection refused") || !strings.Contains(u, "sign of nothing") {
			t.Errorf("unchecked %q: want the API server's silence said, as no sign", u)
		}
	}
}
