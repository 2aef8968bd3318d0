package app

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/controllers/node"
	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam"
	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/internal/controllers/route"
	"github.com/stratus-ccm/stratus/internal/controllers/service"
)

// controllerEntry is one controller as the daemon knows it. Everything
// that depends on the set of controllers (the --controllers vocabulary,
// leader migration's names, the informers a standby fills before it can
// take the lease, the start order) reads the table of these entries, so adding a
// controller is one entry here and its own package.
type controllerEntry struct {
	// Controller is what the flags know of it: its name, the aliases
	// --controllers accepts, leader migration's legacy names, whether
	// '*' enables it.
	options.Controller
	// serviceAccount is the ServiceAccount (in ServiceAccountNamespace)
	// it runs as with --use-service-account-credentials, and the one the
	// chart binds its role to; empty means its name. See
	// ServiceAccountName.
	serviceAccount string
	// eventSource is the component its events are reported under; empty
	// means its name. See EventSource.
	eventSource string
	// requires names the flags without which its start function skips it
	// (flags the chart sets from its values); the chart renders the
	// controller's RBAC only when its values set all of them.
	requires []string
	// chartEnabledBy is a flag whose value, set in the chart, also adds
	// the controller to --controllers: the chart's allocateNodeCIDRs means
	// "Stratus allocates", while the daemon, as upstream's, enables no
	// allocator for the flag alone.
	chartEnabledBy string
	// rbac is what the controller may do as itself; the chart renders it
	// as the controller's ClusterRole (see ChartControllers).
	rbac rbac
	// watches returns the kinds the controller reads through the shared
	// cache: the leader runs those informers, and a standby starts and
	// syncs them once the holder stops renewing the Lease. Nil for a
	// controller that reads none.
	watches func() []client.Object
	// start adds the controller to the manager.
	start StartFunc
}

// builtinControllers is the controller table, in start order. The first
// four are upstream's app's controllers and on by default; the route
// controller additionally needs --configure-cloud-routes and skips itself
// without it, as upstream's does. Node IPAM is off by default, because
// upstream's app has none: a manifest written for it passes
// --allocate-node-cidrs=true to mean "routes for the pod CIDRs
// kube-controller-manager allocates", and a second allocator would race
// kube-controller-manager's on every new Node. It runs only when
// --controllers names it (Azure's own manager calls it node-ipam) and
// --allocate-node-cidrs is true. The wire_*.go files connect each
// controller to the options, one file per controller family; rbac.go holds
// what each may do in the API server. The ServiceAccount and event source
// are upstream's names (see ServiceAccountName and EventSource).
func builtinControllers() []controllerEntry {
	return []controllerEntry{
		{Controller: options.Controller{Name: node.ControllerName, Aliases: []string{"cloud-node"}},
			serviceAccount: "node-controller", rbac: cloudNodeRBAC(),
			watches: node.Watches, start: startCloudNodeController},
		{Controller: options.Controller{Name: nodelifecycle.ControllerName, Aliases: []string{"cloud-node-lifecycle"}},
			serviceAccount: "node-controller", rbac: cloudNodeLifecycleRBAC(),
			watches: nodelifecycle.Watches, start: startCloudNodeLifecycleController},
		{Controller: options.Controller{Name: service.ControllerName, Aliases: []string{"service"}, LegacyMigrationNames: []string{"service-controller"}},
			serviceAccount: "service-controller", eventSource: "service-controller", rbac: serviceLBRBAC(),
			watches: service.Watches, start: startServiceLBController},
		{Controller: options.Controller{Name: route.ControllerName, Aliases: []string{"route"}, LegacyMigrationNames: []string{"route-controller"}},
			serviceAccount: "route-controller", eventSource: "route_controller", rbac: nodeRouteRBAC(),
			requires: []string{"configure-cloud-routes", "cluster-cidr"},
			watches:  route.Watches, start: startNodeRouteController},
		{Controller: options.Controller{Name: nodeipam.ControllerName, Aliases: []string{"node-ipam", "nodeipam"}, OffByDefault: true},
			serviceAccount: "node-controller", eventSource: "cidrAllocator", rbac: nodeIPAMRBAC(),
			requires: []string{"allocate-node-cidrs"}, chartEnabledBy: "allocate-node-cidrs",
			watches: nodeipam.Watches, start: startNodeIPAMController},
	}
}

// builtinEntry is the built-in controller called name, if there is one.
func builtinEntry(name string) (controllerEntry, bool) {
	for _, e := range builtinControllers() {
		if e.Name == name {
			return e, true
		}
	}
	return controllerEntry{}, false
}

// NewOptions returns the daemon's options with upstream's defaults, for the
// built-in controllers.
func NewOptions() *options.Options { return options.New(vocabulary(builtinControllers())) }

// vocabulary is what the options know of each controller in table.
func vocabulary(table []controllerEntry) []options.Controller {
	out := make([]options.Controller, len(table))
	for i, e := range table {
		out[i] = e.Controller
	}
	return out
}

// starters maps every controller's name in table to its start function.
func starters(table []controllerEntry) map[string]StartFunc {
	out := make(map[string]StartFunc, len(table))
	for _, e := range table {
		out[e.Name] = e.start
	}
	return out
}

// kindsFor returns the kinds the enabled controllers of table watch, each
// once. A standby starts and syncs these informers once the holder of the
// lease stops renewing it (leader.NewWarmer), so that when it wins the
// lease it hands its controllers caches that are already complete: their
// first reconcile acts without waiting for a list of every Node and
// Service. A kind missing from a controller's
// watches still works; its informer is then started after the lease is
// won, which the leadership tracker counts and logs as a cold start.
func kindsFor(enabled []string, table []controllerEntry) []client.Object {
	on := map[string]bool{}
	for _, name := range enabled {
		on[name] = true
	}
	seen := map[string]bool{}
	var out []client.Object
	for _, e := range table {
		if !on[e.Name] || e.watches == nil {
			continue
		}
		for _, obj := range e.watches() {
			k := fmt.Sprintf("%T", obj)
			if !seen[k] {
				seen[k] = true
				out = append(out, obj)
			}
		}
	}
	return out
}
