package serving

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/app/options"
)

// authRecheckInterval is how often a missing permission is asked about
// again: RBAC applied after the pod started (a chart installed in
// pieces) is noticed and reported as fixed.
const authRecheckInterval = 30 * time.Second

// delegatedPermission is one permission the secure port's delegated
// authentication or authorization needs from the API server.
type delegatedPermission struct {
	// flag is the kubeconfig flag whose identity needs it.
	flag string
	// kubeconfig is the file that flag resolves to; empty is in-cluster.
	kubeconfig string
	attrs      authorizationv1.ResourceAttributes
}

func (p delegatedPermission) String() string {
	return fmt.Sprintf("%s %s.%s", p.attrs.Verb, p.attrs.Resource, p.attrs.Group)
}

// delegatedPermissions are what upstream's delegated authentication
// (TokenReview) and authorization (SubjectAccessReview) ask the API server
// for, each for the identity of the kubeconfig that does it. Without them
// every request to a protected path (/metrics, /configz) answers 401 or
// 500, as upstream's does, with nothing saying why; the check says which
// permission is missing.
func delegatedPermissions(o *options.Options) []delegatedPermission {
	authn, authz := o.Authentication.RemoteKubeConfigFile, o.Authorization.RemoteKubeConfigFile
	if authn == "" {
		authn = o.KubeconfigPath()
	}
	if authz == "" {
		authz = o.KubeconfigPath()
	}
	return []delegatedPermission{
		{flag: "--authentication-kubeconfig", kubeconfig: authn,
			attrs: authorizationv1.ResourceAttributes{Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"}},
		{flag: "--authorization-kubeconfig", kubeconfig: authz,
			attrs: authorizationv1.ResourceAttributes{Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"}},
	}
}

// authCheck asks the API server, at start and until all are granted,
// whether the identities behind the secure port's delegated authentication
// and authorization hold what they need, and logs exactly what is missing.
// It runs on every replica, since every replica serves.
type authCheck struct {
	perms    []delegatedPermission
	interval time.Duration
	// clientFor builds the API client of a kubeconfig file (empty:
	// in-cluster), as the delegated authenticator and authorizer do.
	clientFor func(kubeconfig string) (kubernetes.Interface, error)
}

func newAuthCheck(o *options.Options) *authCheck {
	return &authCheck{perms: delegatedPermissions(o), interval: authRecheckInterval, clientFor: delegatedClient}
}

func delegatedClient(kubeconfig string) (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q: %w", kubeconfig, err)
	}
	cfg.UserAgent = options.UserAgent
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q: %w", kubeconfig, err)
	}
	return cs, nil
}

// NeedLeaderElection is false: every replica serves the secure port.
func (a *authCheck) NeedLeaderElection() bool { return false }

// Start checks until every permission is granted or ctx ends. A failure
// to ask is logged and asked again; it never stops the daemon.
func (a *authCheck) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("delegated-auth")
	var reported []string
	for {
		missing, err := a.missing(ctx)
		switch {
		case err != nil:
			log.Info("Could not check the permissions of delegated authentication and authorization", "err", err)
		case len(missing) > 0:
			// Said again only when what is missing changes.
			if !slices.Equal(missing, reported) {
				log.Error(nil, "The secure port cannot authenticate or authorize requests: protected paths (/metrics, /configz, /debug) answer 401 without TokenReview, 500 without SubjectAccessReview, until the missing permissions are granted",
					"missing", missing)
				reported = missing
			}
		default:
			if reported != nil {
				log.Info("Delegated authentication and authorization now have the permissions they need")
			} else {
				log.V(2).Info("Delegated authentication and authorization have the permissions they need")
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(a.interval):
		}
	}
}

// missing returns one line per permission not granted: what, to whom,
// through which flag.
func (a *authCheck) missing(ctx context.Context) ([]string, error) {
	var out []string
	for _, p := range a.perms {
		cs, err := a.clientFor(p.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.flag, err)
		}
		attrs := p.attrs
		review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("%s: ask whether %s is allowed: %w", p.flag, p, err)
		}
		if review.Status.Allowed {
			continue
		}
		out = append(out, fmt.Sprintf("%s (needed by %s, identity %s%s)", p, p.flag, identityOf(ctx, cs), kubeconfigNote(p.kubeconfig)))
	}
	return out, nil
}

// identityOf names the client's identity as the API server sees it, or says
// it could not.
func identityOf(ctx context.Context, cs kubernetes.Interface) string {
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username == "" {
		return "unknown"
	}
	u := r.Status.UserInfo
	if len(u.Groups) == 0 {
		return u.Username
	}
	return u.Username + " [groups " + strings.Join(u.Groups, ",") + "]"
}

func kubeconfigNote(path string) string {
	if path == "" {
		return ", in-cluster credentials"
	}
	return ", kubeconfig " + path
}
