package app

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	cloudprovider "k8s.io/cloud-provider"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stratus-ccm/stratus/internal/app/leader"
	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/cloudwrap"
	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/internal/ownership"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// ControllerContext is what a controller's start function receives. A start
// function takes everything a controller talks to from here, never from a
// global: its API access from Clients, its metrics registerer from Metrics.
type ControllerContext struct {
	// Manager runs the controller. Start functions use it to add the
	// controller (SetupWithManager), not to reach for clients: those come
	// from Clients.
	Manager manager.Manager
	// Cloud is the instrumented, rate-limited provider (planned, not
	// called, for mutating calls in observe mode).
	Cloud   cloud.Cloud
	Options *options.Options
	// ClusterName is passed to every cloud call that takes one.
	ClusterName string
	// Metrics receives every controller's metrics; Run serves it on
	// /metrics.
	Metrics prometheus.Registerer
	// Explain receives the controllers' per-object record, served at
	// /debug/explain; nil records nothing.
	Explain *explain.Store
	// NewClients builds one controller's API access, given its name. Nil
	// means managerClients: every controller shares the manager's
	// credentials and cache.
	NewClients func(name string) (Clients, error)
	// Fence, when set, refuses every controller's writes (a Node's
	// deletion first) once this replica cannot prove it holds the lease.
	Fence *cloudwrap.Fence
}

// Clients is one controller's access to the API server.
type Clients struct {
	// Client is the controller's writer. Its reads are served by the
	// shared informer cache (the manager's client reads through it).
	Client client.Client
	// Reader reads from the shared informer cache; a controller that must
	// read past the cache (to confirm before deleting) uses APIReader.
	Reader client.Reader
	// APIReader reads from the API server directly.
	APIReader client.Reader
	// Recorder emits events reported by the controller's event source
	// (EventSource: upstream's for the built-in controllers).
	Recorder events.EventRecorder
	// Config is the controller's REST config, for a controller written
	// against client-go's typed clients.
	Config *rest.Config
}

// Clients returns the API access of the controller called name.
func (cc ControllerContext) Clients(name string) (Clients, error) {
	cl := Clients{}
	if cc.NewClients == nil {
		cl = managerClients(cc.Manager, name)
	} else {
		var err error
		if cl, err = cc.NewClients(name); err != nil {
			return Clients{}, fmt.Errorf("%s: API clients: %w", name, err)
		}
	}
	if cc.Fence != nil {
		cl.Client = leader.FenceClient(cl.Client, cc.Fence.Check)
	}
	return cl, nil
}

// managerClients is every controller sharing the manager's credentials.
func managerClients(mgr manager.Manager, name string) Clients {
	return Clients{
		Client:    mgr.GetClient(),
		Reader:    mgr.GetCache(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder(EventSource(name)),
		Config:    mgr.GetConfig(),
	}
}

// StartFunc adds one controller to the manager. It returns false, with a
// reason, when the controller does not apply (the provider lacks the
// capability, or its flags are off); that is logged, not an error.
type StartFunc func(ctx context.Context, cc ControllerContext) (started bool, reason string, err error)

// ownership is the hybrid-cluster policy the node controllers and the
// service controller share: the flag's platforms, else the provider's.
func (cc ControllerContext) ownership() (ownership.Policy, error) {
	var p cloudprovider.Interface
	if cc.Cloud != nil {
		p = cc.Cloud.Unwrap()
	}
	pol, err := ownership.New(cc.Options.Safety.CloudProviderPlatforms, p)
	if err != nil {
		return ownership.Policy{}, fmt.Errorf("node ownership: %w", err)
	}
	return pol, nil
}

// shared is what every built-in controller takes from the daemon
// (kit.Deps): its API access under its own identity, the metrics
// registry, the cloud's recovery notices, explain's record and the
// hybrid-cluster ownership policy. The Clients are returned too, for a
// controller that also reads past the cache.
func (cc ControllerContext) shared(name string) (kit.Deps, Clients, error) {
	cl, err := cc.Clients(name)
	if err != nil {
		return kit.Deps{}, Clients{}, err
	}
	pol, err := cc.ownership()
	if err != nil {
		return kit.Deps{}, Clients{}, err
	}
	d := kit.Deps{Client: cl.Client, Recorder: cl.Recorder, Registerer: cc.Metrics, Recovery: cc.Cloud, Ownership: pol, Explain: cc.Explain}
	if pb, ok := cc.Cloud.(kit.PushbackReporter); ok {
		d.Pushback = pb
	}
	return d, cl, nil
}
