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
)

// controllerList names the built-in controllers, for --controllers' help.
func controllerList() string { return strings.Join(names(builtinControllers()), ", ") }

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
// 'name' enables one, '-name' disables one; a disabled name wins. table
// lists every controller in start order, built-in ones first.
func resolveControllers(spec []string, table []controllerEntry) ([]string, error) {
	byName := map[string]bool{}
	for _, k := range table {
		byName[k.name] = true
	}
	alias := aliases(table)
	canonical := func(n string) (string, error) {
		if a, ok := alias[n]; ok {
			return a, nil
		}
		if byName[n] {
			return n, nil
		}
		return "", fmt.Errorf("--controllers=%s: unknown controller %q (known: %s; aliases: %s)",
			strings.Join(spec, ","), n, strings.Join(names(table), ", "), aliasList(alias))
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
	for _, k := range table {
		if disabled[k.name] {
			continue
		}
		if (star && !k.offByDefault) || enabled[k.name] {
			out = append(out, k.name)
		}
	}
	return out, nil
}

func aliasList(alias map[string]string) string {
	var out []string
	for a, n := range alias {
		out = append(out, a+"="+n)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
