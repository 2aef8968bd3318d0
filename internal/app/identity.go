package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stratus-ccm/stratus/internal/app/options"
)

// ServiceAccountName is the ServiceAccount (in ServiceAccountNamespace) a
// controller runs as with --use-service-account-credentials: upstream's
// app's client name for it, as its table entry gives it, so that a
// manifest's RBAC written for upstream (and kube-apiserver's bootstrap
// system:controller:* roles, bound to these names) covers Stratus too. The
// node controllers share "node-controller", as upstream's do (and Azure's
// node IPAM); a provider's own controller runs as its own name.
func ServiceAccountName(controller string) string {
	if e, ok := builtinEntry(controller); ok {
		return e.account()
	}
	return controller
}

// account is the ServiceAccount the controller e runs as: its entry's,
// else its name.
func (e controllerEntry) account() string {
	if e.serviceAccount != "" {
		return e.serviceAccount
	}
	return e.Name
}

// EventSource is the source component (and so the reportingController) of
// the events a controller records: upstream's for each of the built-in
// controllers, as their table entries give it, which operators' event
// filters and alerts select on, so that they see Stratus' events as they
// saw upstream's. The node controllers' names are upstream's own; the
// service and route controllers report as upstream's do, under names other
// than the ones --controllers takes; node IPAM as kube-controller-manager's
// range allocator, whose job it takes over. A provider's own controller
// reports under its own name.
func EventSource(controller string) string {
	if e, ok := builtinEntry(controller); ok && e.eventSource != "" {
		return e.eventSource
	}
	return controller
}

// identities gives each controller its own connection to the API server:
// with --use-service-account-credentials, as its ServiceAccount (tokens
// through TokenRequest, made with the daemon's client); otherwise with the
// daemon's credentials. Either way a controller gets its own client (and
// so its own client-side rate limit, as upstream's clients have) and its
// own event broadcaster, so its writes and events carry its identity.
// Shared caches stay on the daemon's identity, as upstream's informers do.
type identities struct {
	mgr  manager.Manager
	base *rest.Config
	// sas is the daemon's ServiceAccount client, nil without the flag.
	sas kubernetes.Interface
	// observe is --observe: a ServiceAccount's creation is only planned
	// (a dry run), so a missing one stays missing; its controller then
	// reads as the daemon, since it writes nothing anyway.
	observe bool

	mu           sync.Mutex
	broadcasters []record.EventBroadcaster
}

func newIdentities(mgr manager.Manager, base *rest.Config, useServiceAccounts, observe bool) (*identities, error) {
	ids := &identities{mgr: mgr, base: base, observe: observe}
	if useServiceAccounts {
		cs, err := kubernetes.NewForConfig(base)
		if err != nil {
			return nil, fmt.Errorf("--use-service-account-credentials: client for token requests: %w", err)
		}
		ids.sas = cs
	}
	return ids, nil
}

// forController builds the API access of one controller. With service
// account credentials the first token is requested here, so a missing
// ServiceAccount or a daemon not allowed to mint its token fails the start
// with an error naming it, rather than every later request.
func (ids *identities) forController(ctx context.Context, name string) (Clients, error) {
	cfg, user, err := ids.config(ctx, name)
	if err != nil {
		return Clients{}, err
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("%s: http client: %w", name, err)
	}
	opts := client.Options{HTTPClient: httpClient, Scheme: ids.mgr.GetScheme(), Mapper: ids.mgr.GetRESTMapper()}
	direct, err := client.New(cfg, opts)
	if err != nil {
		return Clients{}, fmt.Errorf("%s: client: %w", name, err)
	}
	// Reads are served by the shared cache; only writes go to the API
	// server as this controller.
	opts.Cache = &client.CacheOptions{Reader: ids.mgr.GetCache()}
	cached, err := client.New(cfg, opts)
	if err != nil {
		return Clients{}, fmt.Errorf("%s: client: %w", name, err)
	}
	kube, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return Clients{}, fmt.Errorf("%s: kubernetes client: %w", name, err)
	}
	// Events go through the core API (v1 Events), as upstream's
	// controllers record them: the roles written for upstream-based
	// managers (AWS' chart, the bootstrap system:controller:* roles)
	// grant core events and not events.k8s.io, so events.k8s.io events
	// would all be refused under them.
	log := klog.FromContext(ctx)
	b := record.NewBroadcaster(record.WithContext(klog.NewContext(context.WithoutCancel(ctx), log)))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	b.StartStructuredLogging(1)
	ids.mu.Lock()
	ids.broadcasters = append(ids.broadcasters, b)
	ids.mu.Unlock()
	if user != "" {
		log.Info("Controller runs as its ServiceAccount", "user", user)
	}
	return Clients{
		Client:    cached,
		Reader:    ids.mgr.GetCache(),
		APIReader: direct,
		Recorder:  record.NewEventRecorderAdapter(b.NewRecorder(ids.mgr.GetScheme(), corev1.EventSource{Component: EventSource(name)})),
		Config:    cfg,
	}, nil
}

// config is the controller's REST config and, with service account
// credentials, the user name the API server will see.
func (ids *identities) config(ctx context.Context, name string) (*rest.Config, string, error) {
	if ids.sas == nil {
		cfg := rest.CopyConfig(ids.base)
		cfg.UserAgent = options.UserAgent + "/" + name
		return cfg, "", nil
	}
	sa := ServiceAccountName(name)
	sas := ids.sas.CoreV1().ServiceAccounts(ServiceAccountNamespace)
	// The source creates the ServiceAccount when it is missing, as
	// upstream's client builder does, so that upstream's RBAC (which
	// grants create on ServiceAccounts) and kube-apiserver's bootstrap
	// roles are all a cluster needs, and no manifest of Stratus' need
	// declare a ServiceAccount that kube-controller-manager or another
	// manager shares (its uninstall would delete it).
	src := transport.NewCachedTokenSource(&saTokenSource{ctx: ctx, sas: sas, name: sa, now: time.Now})
	if _, err := src.Token(); err != nil {
		if ids.observe && errors.Is(err, errServiceAccountMissing) {
			klog.FromContext(ctx).Info("Observe mode: the controller's ServiceAccount is missing and its creation only planned; the controller reads with the daemon's credentials",
				"controller", name, "serviceAccount", ServiceAccountNamespace+"/"+sa)
			cfg := rest.CopyConfig(ids.base)
			cfg.UserAgent = options.UserAgent + "/" + name
			return cfg, "", nil
		}
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	// The daemon's credentials are dropped: only the token speaks. Its
	// transport wrappers stay (observe mode's dry runs): they are not
	// credentials, and dropping them would make observe mode write.
	cfg := rest.AnonymousClientConfig(ids.base)
	cfg.WrapTransport = ids.base.WrapTransport
	user := "system:serviceaccount:" + ServiceAccountNamespace + ":" + sa
	cfg.UserAgent = options.UserAgent + "/" + name
	cfg.Wrap(transport.ResettableTokenSourceWrapTransport(src))
	return cfg, user, nil
}

// shutdown flushes and stops every controller's event broadcaster.
func (ids *identities) shutdown() {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	for _, b := range ids.broadcasters {
		b.Shutdown()
	}
	ids.broadcasters = nil
}
