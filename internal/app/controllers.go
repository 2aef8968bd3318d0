package app

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/controllers/node"
	"github.com/stratus-ccm/stratus/pkg/controllers/nodeipam"
	"github.com/stratus-ccm/stratus/pkg/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/pkg/controllers/route"
	"github.com/stratus-ccm/stratus/pkg/controllers/service"
)

// controllerAliases maps upstream's pre-1.28 names to the current ones, so
// that old manifests keep working. The current names are the controller
// packages' ControllerName constants.
var controllerAliases = map[string]string{
	"cloud-node":           node.ControllerName,
	"cloud-node-lifecycle": nodelifecycle.ControllerName,
	"service":              service.ControllerName,
	"route":                route.ControllerName,
	"nodeipam":             nodeipam.ControllerName,
}

// allControllers lists every controller; all are on by default. The network
// controllers additionally need their own flags (--allocate-node-cidrs,
// --configure-cloud-routes) and skip themselves without them, as upstream's do.
var allControllers = []string{
	node.ControllerName,
	nodelifecycle.ControllerName,
	service.ControllerName,
	route.ControllerName,
	nodeipam.ControllerName,
}

func controllerList() string { return strings.Join(allControllers, ", ") }

// ControllerContext is what a controller's start function receives. A start
// function takes everything a controller talks to from here, never from a
// global: its API access from Clients, its metrics registerer from Metrics.
type ControllerContext struct {
	// Manager runs the controller. Start functions use it to add the
	// controller (SetupWithManager), not to reach for clients: those come
	// from Clients.
	Manager manager.Manager
	// Cloud is the instrumented, rate-limited provider.
	Cloud   *cloud.Cloud
	Options *Options
	// ClusterName is passed to every cloud call that takes one.
	ClusterName string
	// Metrics receives every controller's metrics; Run serves it on
	// /metrics.
	Metrics prometheus.Registerer
	// NewClients builds one controller's API access, given its name. Nil
	// means managerClients: every controller shares the manager's
	// credentials and cache.
	NewClients func(name string) (Clients, error)
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
	// Recorder emits events reported by the controller's name.
	Recorder events.EventRecorder
	// Config is the controller's REST config, for a controller written
	// against client-go's typed clients.
	Config *rest.Config
}

// Clients returns the API access of the controller called name.
func (cc ControllerContext) Clients(name string) (Clients, error) {
	if cc.NewClients == nil {
		return managerClients(cc.Manager, name), nil
	}
	cl, err := cc.NewClients(name)
	if err != nil {
		return Clients{}, fmt.Errorf("%s: API clients: %w", name, err)
	}
	return cl, nil
}

// managerClients is every controller sharing the manager's credentials.
func managerClients(mgr manager.Manager, name string) Clients {
	return Clients{
		Client:    mgr.GetClient(),
		Reader:    mgr.GetCache(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder(name),
		Config:    mgr.GetConfig(),
	}
}

// StartFunc adds one controller to the manager. It returns false, with a
// reason, when the controller does not apply (the provider lacks the
// capability, or its flags are off); that is logged, not an error.
type StartFunc func(ctx context.Context, cc ControllerContext) (started bool, reason string, err error)

// resolveControllers turns the --controllers list into the set of enabled
// names, with upstream's semantics: '*' enables every default controller,
// 'name' enables one, '-name' disables one; a disabled name wins. known
// lists every controller in start order, built-in ones first.
func resolveControllers(spec []string, known []knownController) ([]string, error) {
	byName := map[string]bool{}
	for _, k := range known {
		byName[k.name] = true
	}
	canonical := func(n string) (string, error) {
		if a, ok := controllerAliases[n]; ok {
			return a, nil
		}
		if byName[n] {
			return n, nil
		}
		return "", fmt.Errorf("--controllers=%s: unknown controller %q (known: %s; aliases: %s)",
			strings.Join(spec, ","), n, knownList(known), aliasList())
	}
	star := false
	enabled, disabled := map[string]bool{}, map[string]bool{}
	for _, raw := range spec {
		item := strings.TrimSpace(raw)
		switch {
		case item == "*":
			star = true
		case strings.HasPrefix(item, "-"):
			n, err := canonical(strings.TrimPrefix(item, "-"))
			if err != nil {
				return nil, err
			}
			disabled[n] = true
		case item == "":
			return nil, fmt.Errorf("--controllers=%s: empty controller name", strings.Join(spec, ","))
		default:
			n, err := canonical(item)
			if err != nil {
				return nil, err
			}
			enabled[n] = true
		}
	}
	var both []string
	for n := range disabled {
		if enabled[n] {
			both = append(both, n)
		}
	}
	if len(both) > 0 {
		sort.Strings(both)
		return nil, fmt.Errorf("--controllers=%s: %s both enabled and disabled", strings.Join(spec, ","), strings.Join(both, ", "))
	}
	var out []string
	for _, k := range known {
		if disabled[k.name] {
			continue
		}
		if (star && !k.offByDefault) || enabled[k.name] {
			out = append(out, k.name)
		}
	}
	return out, nil
}

func aliasList() string {
	var out []string
	for a, n := range controllerAliases {
		out = append(out, a+"="+n)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
