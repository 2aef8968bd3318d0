package app

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/controllers/node"
	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam"
	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/internal/controllers/route"
	"github.com/stratus-ccm/stratus/internal/controllers/service"
)

// controllerEntry is one controller as the daemon knows it. Everything
// that depends on the set of controllers (the --controllers vocabulary,
// leader migration's names, the informers every replica warms before it
// leads, the start order) reads the table of these entries, so adding a
// controller is one entry here and its own package.
type controllerEntry struct {
	// name is the controller package's ControllerName: the --controllers
	// entry, the leader migration name, the event reporter and field
	// manager.
	name string
	// aliases are other names --controllers accepts for it (upstream's
	// pre-1.28 names), so that old manifests keep working.
	aliases []string
	// legacyMigrationNames are names upstream's own default
	// LeaderMigrationConfiguration still gives it (kube-controller-manager's
	// names from before 1.28). A cloud-controller-manager matches
	// migration entries by exact name, so these match none of its
	// controllers, in upstream and in Stratus alike; they are accepted so
	// that upstream's default and files written against it load unchanged.
	legacyMigrationNames []string
	// watches returns the kinds the controller reads through the shared
	// cache: every replica starts and syncs those informers before it
	// campaigns. Nil for a controller that reads none.
	watches func() []client.Object
	// start adds the controller to the manager.
	start StartFunc
	// offByDefault leaves it out of '*'.
	offByDefault bool
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
// controller to the options, one file per controller family.
func builtinControllers() []controllerEntry {
	return []controllerEntry{
		{name: node.ControllerName, aliases: []string{"cloud-node"},
			watches: node.Watches, start: startCloudNodeController},
		{name: nodelifecycle.ControllerName, aliases: []string{"cloud-node-lifecycle"},
			watches: nodelifecycle.Watches, start: startCloudNodeLifecycleController},
		{name: service.ControllerName, aliases: []string{"service"}, legacyMigrationNames: []string{"service-controller"},
			watches: service.Watches, start: startServiceLBController},
		{name: route.ControllerName, aliases: []string{"route"}, legacyMigrationNames: []string{"route-controller"},
			watches: route.Watches, start: startNodeRouteController},
		{name: nodeipam.ControllerName, aliases: []string{"node-ipam", "nodeipam"},
			watches: nodeipam.Watches, start: startNodeIPAMController, offByDefault: true},
	}
}

// names returns the table's controller names in order.
func names(table []controllerEntry) []string {
	out := make([]string, len(table))
	for i, e := range table {
		out[i] = e.name
	}
	return out
}

// aliases maps every alias in table to its controller's name.
func aliases(table []controllerEntry) map[string]string {
	out := map[string]string{}
	for _, e := range table {
		for _, a := range e.aliases {
			out[a] = e.name
		}
	}
	return out
}

// starters maps every controller's name in table to its start function.
func starters(table []controllerEntry) map[string]StartFunc {
	out := make(map[string]StartFunc, len(table))
	for _, e := range table {
		out[e.name] = e.start
	}
	return out
}
