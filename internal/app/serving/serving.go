package serving

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/server/routes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stratus-ccm/stratus/internal/app/leader"
	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/internal/observe"
)

// shutdownTimeout bounds how long in-flight requests may finish on exit.
const shutdownTimeout = 5 * time.Second

// healthChecks are the named checks behind /healthz, /livez and /readyz.
// Liveness says the process should keep running; readiness says it can do
// its job if asked: caches synced and the Lease reachable. A standby is
// ready (a Deployment of two replicas becomes Ready with one leader).
type healthChecks struct {
	live  []healthz.HealthChecker
	ready []healthz.HealthChecker
}

func newHealthChecks(synced *atomic.Bool, lock *leader.Lock, o *options.Options) healthChecks {
	informers := healthz.NamedCheck("informer-sync", func(*http.Request) error {
		// A standby lists only once the holder stops renewing
		// (standby.Warmer): it is ready without caches.
		if !synced.Load() && (lock == nil || lock.Holding()) {
			return fmt.Errorf("informer caches not synced yet")
		}
		return nil
	})
	h := healthChecks{
		live:  []healthz.HealthChecker{healthz.PingHealthz},
		ready: []healthz.HealthChecker{healthz.PingHealthz, informers},
	}
	if lock != nil {
		h.live = append(h.live, lock.LiveCheck(o.LeaseDuration))
		h.ready = append(h.ready, lock.ReadyCheck(o.LeaseDuration))
	}
	return h
}

// server serves the health endpoints, /metrics, /configz and (with
// --profiling) /debug/pprof on the secure port through upstream's handler chain:
// delegated authentication, then delegated authorization, with the
// --authorization-always-allow-paths open to anyone. It runs on every
// replica, leader or not, so that probes and scrapes work on standbys too.
type server struct {
	cfg     *servingConfig
	handler http.Handler
}

func newServer(o *options.Options, cfg *servingConfig, gatherer prometheus.Gatherer, checks healthChecks, debug map[string]http.Handler) *server {
	m := mux.NewPathRecorderMux(options.UserAgent)
	healthz.InstallHandler(m, checks.live...)
	healthz.InstallLivezHandler(m, checks.live...)
	healthz.InstallReadyzHandler(m, checks.ready...)
	m.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	if o.Profiling {
		routes.Profiling{}.Install(m)
		routes.DebugFlags{}.Install(m, "v", routes.StringFlagPutHandler(logs.GlogSetter))
	}
	// /configz and the debug pages (observe mode's plan) are authorized
	// like /metrics, as upstream authorizes /configz.
	for path, h := range debug {
		m.Handle(path, h)
	}
	return &server{cfg: cfg, handler: buildHandlerChain(m, cfg)}
}

// buildHandlerChain is upstream controller managers' chain
// (k8s.io/controller-manager/app.BuildHandlerChain): a bad token is 401, a
// valid one without RBAC 403, as with any Kubernetes component.
func buildHandlerChain(h http.Handler, cfg *servingConfig) http.Handler {
	resolver := &apirequest.RequestInfoFactory{}
	handler := genericapifilters.WithAuthorization(h, cfg.authz.Authorizer, clientgoscheme.Codecs)
	handler = genericapifilters.WithAuthentication(handler, cfg.authn.Authenticator, genericapifilters.Unauthorized(clientgoscheme.Codecs), nil, nil)
	handler = genericapifilters.WithRequestInfo(handler, resolver)
	handler = genericapifilters.WithCacheControl(handler)
	handler = genericfilters.WithHTTPLogging(handler)
	return genericfilters.WithPanicRecovery(handler, resolver)
}

// Start serves until ctx ends, then waits for the listener to close.
func (s *server) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("address", s.cfg.serving.Listener.Addr().String())
	stopped, _, err := s.cfg.serving.Serve(s.handler, shutdownTimeout, ctx.Done())
	if err != nil {
		return fmt.Errorf("serving %s: %w", s.cfg.serving.Listener.Addr(), err)
	}
	log.Info("Serving health, metrics and debug endpoints over HTTPS")
	<-stopped
	return nil
}

// NeedLeaderElection is false: every replica serves probes and metrics.
func (s *server) NeedLeaderElection() bool { return false }

// Inputs are what the secure port serves from: the metrics, the readiness
// and leadership of this replica, and the record behind the debug pages.
type Inputs struct {
	// Gatherer is served on /metrics.
	Gatherer prometheus.Gatherer
	// Synced is set once the enabled controllers' informers have synced.
	Synced *atomic.Bool
	// Lock is the observed Lease lock; nil when this replica does not
	// campaign.
	Lock *leader.Lock
	// Controllers and Migration fill /configz's controller list and
	// leader migration.
	Controllers []options.Controller
	Migration   *options.MigrationPlan
	// Observe is observe mode's recorder, nil when off.
	Observe *observe.Recorder
	// Explain is the controllers' per-object record.
	Explain *explain.Store
}

// Add adds the secure port's server to mgr. Besides /metrics, it serves
// /configz and observe mode's pages behind the same authorization. The
// check beside it says which permission the delegated authentication or
// authorization lacks, if any.
func Add(ctx context.Context, mgr manager.Manager, o *options.Options, in Inputs) error {
	checks := newHealthChecks(in.Synced, in.Lock, o)
	explainH := explainHandler(in.Explain, in.Lock)
	gatherer, rec := in.Gatherer, in.Observe
	debug := map[string]http.Handler{}
	maps.Copy(debug, debugHandlers(rec, explainH))
	configz, err := configzHandler(componentConfig(o, in.Controllers, in.Migration))
	if err != nil {
		return err
	}
	debug[configzPath] = configz
	cfg, err := newServingConfig(ctx, o)
	if err != nil {
		return err
	}
	if err := mgr.Add(newServer(o, cfg, gatherer, checks, debug)); err != nil {
		cfg.close()
		return fmt.Errorf("add server: %w", err)
	}
	if err := mgr.Add(newAuthCheck(o)); err != nil {
		return fmt.Errorf("add delegated authentication check: %w", err)
	}
	return nil
}
