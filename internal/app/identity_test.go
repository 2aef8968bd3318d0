package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/node"
	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam"
	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/internal/controllers/route"
	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/internal/observe"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

func whoAmI(ctx context.Context, t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	return r.Status.UserInfo.Username
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func kubeFor(t *testing.T, c Clients) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestControllerIdentities runs against a real API server: with
// --use-service-account-credentials a controller's clients speak as its
// ServiceAccount (and as nothing else: a write its role lacks is refused
// to that user), without it they speak as the daemon, and a missing
// ServiceAccount fails the controller's start by name.
func TestControllerIdentities(t *testing.T) {
	env := testbed.Start(t)
	ctx := testbed.Context(t, 2*time.Minute)
	daemon := whoAmI(ctx, t, env.Clientset)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ServiceAccountNamespace, Name: ServiceAccountName(node.ControllerName)}}
	if _, err := env.Clientset.CoreV1().ServiceAccounts(ServiceAccountNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mgr, err := newManager(NewOptions(), env.Config, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("own service account", func(t *testing.T) {
		// A transport wrapper of the daemon's config (observe mode's dry
		// runs) must reach the controller's client with the token.
		base := rest.CopyConfig(env.Config)
		var wrapped atomic.Int32
		base.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				wrapped.Add(1)
				return rt.RoundTrip(r)
			})
		})
		ids, err := newIdentities(mgr, base, true, false)
		if err != nil {
			t.Fatal(err)
		}
		defer ids.shutdown()
		id, err := ids.forController(ctx, node.ControllerName)
		if err != nil {
			t.Fatal(err)
		}
		want := "system:serviceaccount:kube-system:node-controller"
		before := wrapped.Load()
		if got := whoAmI(ctx, t, kubeFor(t, id)); got != want {
			t.Fatalf("clientset speaks as %q, want %q", got, want)
		}
		if wrapped.Load() == before {
			t.Fatal("the daemon config's transport wrapper was dropped from the controller's client")
		}
		// kube-apiserver's bootstrap role for node-controller does not
		// grant creating Nodes: the controller-runtime client's write must
		// be refused to the ServiceAccount, not done with the daemon's
		// rights.
		for what, c := range map[string]client.Writer{"client": id.Client, "API reader's client": id.APIReader.(client.Client)} {
			err = c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: write without a role: %v, want forbidden to %s", what, err, want)
			}
		}
	})

	// Events go through the core API, which upstream-based managers'
	// roles grant (AWS' chart: core events create, patch, update), not
	// events.k8s.io: under such a role alone, the event is recorded.
	t.Run("events through the core API", func(t *testing.T) {
		// A provider's own controller runs as its own name, which no
		// bootstrap role covers (upstream's names' roles grant both APIs).
		const probe = "events-probe"
		coreEventsOnly(ctx, t, env.Clientset, ServiceAccountName(probe))
		ids, err := newIdentities(mgr, env.Config, true, false)
		if err != nil {
			t.Fatal(err)
		}
		defer ids.shutdown()
		id, err := ids.forController(ctx, probe)
		if err != nil {
			t.Fatal(err)
		}
		n, err := env.Clientset.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "evented"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		id.Recorder.Eventf(n, nil, corev1.EventTypeNormal, "Probe", "Probe", "recorded as %s", probe)
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			evs, err := env.Clientset.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=evented"})
			if err != nil {
				return false, err
			}
			for _, e := range evs.Items {
				if e.Reason == "Probe" && e.Source.Component == probe && e.Message == "recorded as "+probe {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("no core event from %s under a role granting only core events: %v", probe, err)
		}
	})

	// Each built-in controller's events carry the source upstream's
	// controller records them under (in source.component and
	// reportingController), which operators' event filters and alerts
	// select on, whatever --controllers calls the controller.
	t.Run("events under upstream's sources", func(t *testing.T) {
		ids, err := newIdentities(mgr, env.Config, false, false)
		if err != nil {
			t.Fatal(err)
		}
		defer ids.shutdown()
		n, err := env.Clientset.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sourced"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Upstream's: k8s.io/cloud-provider's controllers and
		// kube-controller-manager's range allocator.
		for ctrl, want := range map[string]string{
			node.ControllerName:          "cloud-node-controller",
			nodelifecycle.ControllerName: "cloud-node-lifecycle-controller",
			service.ControllerName:       "service-controller",
			route.ControllerName:         "route_controller",
			nodeipam.ControllerName:      "cidrAllocator",
			"mycloud-firewall":           "mycloud-firewall",
		} {
			id, err := ids.forController(ctx, ctrl)
			if err != nil {
				t.Fatal(err)
			}
			id.Recorder.Eventf(n, nil, corev1.EventTypeNormal, "Probe", "Probe", "from %s", ctrl)
			err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				evs, err := env.Clientset.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=sourced"})
				if err != nil {
					return false, err
				}
				for _, e := range evs.Items {
					if e.Message == "from "+ctrl {
						if e.Source.Component != want || e.ReportingController != want {
							return false, fmt.Errorf("source %q, reportingController %q, want %q", e.Source.Component, e.ReportingController, want)
						}
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				t.Errorf("%s's event: %v", ctrl, err)
			}
		}
	})

	t.Run("daemon identity without the flag", func(t *testing.T) {
		ids, err := newIdentities(mgr, env.Config, false, false)
		if err != nil {
			t.Fatal(err)
		}
		defer ids.shutdown()
		id, err := ids.forController(ctx, service.ControllerName)
		if err != nil {
			t.Fatal(err)
		}
		if got := whoAmI(ctx, t, kubeFor(t, id)); got != daemon {
			t.Fatalf("speaks as %q, want the daemon %q", got, daemon)
		}
	})

	// The provider's Initialize gets clients as upstream's app gives them:
	// with the flag, the ServiceAccount it names (created when missing;
	// AWS' asks for aws-cloud-provider), without it the daemon.
	t.Run("provider client builder", func(t *testing.T) {
		ids, err := newIdentities(mgr, env.Config, true, false)
		if err != nil {
			t.Fatal(err)
		}
		defer ids.shutdown()
		cs, err := newClientBuilder(env.Config).withServiceAccounts(ctx, ids).Client("aws-cloud-provider")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := whoAmI(ctx, t, cs), "system:serviceaccount:kube-system:aws-cloud-provider"; got != want {
			t.Fatalf("with the flag the provider's client speaks as %q, want %q", got, want)
		}
		plain, err := newIdentities(mgr, env.Config, false, false)
		if err != nil {
			t.Fatal(err)
		}
		cs, err = newClientBuilder(env.Config).withServiceAccounts(ctx, plain).Client("aws-cloud-provider")
		if err != nil {
			t.Fatal(err)
		}
		if got := whoAmI(ctx, t, cs); got != daemon {
			t.Fatalf("without the flag the provider's client speaks as %q, want the daemon %q", got, daemon)
		}
	})

	// A missing ServiceAccount is created, as upstream's client builder
	// creates it; a daemon that may not create it fails the controller's
	// start with an error naming the ServiceAccount and the right.
	t.Run("missing service account", func(t *testing.T) {
		limited := limitedDaemon(ctx, t, env)
		ids, err := newIdentities(mgr, limited, true, false)
		if err != nil {
			t.Fatal(err)
		}
		defer ids.shutdown()
		_, err = ids.forController(ctx, route.ControllerName)
		if !errors.Is(err, errServiceAccountMissing) || !strings.Contains(err.Error(), "kube-system/route-controller") ||
			!strings.Contains(err.Error(), "create on serviceaccounts") {
			t.Fatalf("start without its ServiceAccount, not allowed to create it: %v", err)
		}

		ids, err = newIdentities(mgr, env.Config, true, false)
		if err != nil {
			t.Fatal(err)
		}
		defer ids.shutdown()
		id, err := ids.forController(ctx, route.ControllerName)
		if err != nil {
			t.Fatalf("start without its ServiceAccount, allowed to create it: %v", err)
		}
		if got, want := whoAmI(ctx, t, kubeFor(t, id)), "system:serviceaccount:kube-system:route-controller"; got != want {
			t.Fatalf("speaks as %q, want %q", got, want)
		}
	})

	// In observe mode the missing ServiceAccount's creation is only
	// planned: the controller starts with the daemon's credentials
	// instead of failing, and the account is still missing after.
	t.Run("missing service account in observe mode", func(t *testing.T) {
		rec, err := observe.NewRecorder(prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		ids, err := newIdentities(mgr, observeConfig(env.Config, rec), true, true)
		if err != nil {
			t.Fatal(err)
		}
		defer ids.shutdown()
		const name = "observe-probe"
		id, err := ids.forController(ctx, name)
		if err != nil {
			t.Fatalf("observe mode without the ServiceAccount: %v", err)
		}
		if got := whoAmI(ctx, t, kubeFor(t, id)); got != daemon {
			t.Errorf("speaks as %q, want the daemon %q", got, daemon)
		}
		if _, err := env.Clientset.CoreV1().ServiceAccounts(ServiceAccountNamespace).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("observe mode created ServiceAccount %s (get: %v)", name, err)
		}
		if len(rec.Changes()) == 0 {
			t.Error("the ServiceAccount's creation was not planned")
		}
	})
}

// limitedDaemon is a daemon identity that may request controller tokens
// but not create ServiceAccounts.
func limitedDaemon(ctx context.Context, t *testing.T, env *testbed.Env) *rest.Config {
	t.Helper()
	cs := env.Clientset
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ServiceAccountNamespace, Name: "limited-daemon"}}
	if _, err := cs.CoreV1().ServiceAccounts(ServiceAccountNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "tokens-only"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
	}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tokens-only"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ServiceAccountNamespace, Name: sa.Name}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := localcluster.ServiceAccountConfig(ctx, env.Config, ServiceAccountNamespace, sa.Name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// coreEventsOnly binds the ServiceAccount kube-system/sa to a role that
// grants core events as AWS' chart does, and nothing of events.k8s.io.
func coreEventsOnly(ctx context.Context, t *testing.T, cs kubernetes.Interface, sa string) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "core-events-only"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
	}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "core-events-only"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ServiceAccountNamespace, Name: sa}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
