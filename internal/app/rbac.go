package app

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
)

// rbac is what one controller may do in the API server as itself, beyond
// what the daemon's own role covers (reading the shared cache). It lives in
// the controller's table entry, and the chart renders it, from the file
// ChartControllers generates, as the controller's ClusterRole bound to its
// ServiceAccount; so a controller's permissions are written once, beside
// its name.
type rbac struct {
	// Rules are the controller's rules, events aside: every controller
	// records events, and the chart grants them to each.
	Rules []rule `json:"rules"`
	// Writes are the core resources the controller writes. Observe mode
	// reads each object before its dry-run write, to report the change,
	// so with --observe the chart grants get on these.
	Writes []string `json:"writes"`
	// RareEvents, when set, is the rare path on which alone the controller
	// records events; the chart marks its events rules "rare:" with it.
	RareEvents string `json:"rareEvents"`
}

// rule is one RBAC rule and why the controller needs it.
type rule struct {
	// Why is the comment the chart writes above the rule, one line a
	// line. A comment that starts "rare: " marks a rule only a rare path
	// uses: test/e2e's least-privilege test excuses those, and only
	// those, from being used during its run.
	Why string `json:"why"`
	rbacv1.PolicyRule
}

// coreRule is a rule on resources of the core API group.
func coreRule(why string, resources []string, verbs ...string) rule {
	return rule{Why: why, PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: resources, Verbs: verbs}}
}

func cloudNodeRBAC() rbac {
	return rbac{
		Rules: []rule{
			coreRule("Initialization and refresh: providerID, labels and the taint removal\n(spec and metadata) ...",
				[]string{"nodes"}, "patch"),
			coreRule("... and addresses (status).", []string{"nodes/status"}, "patch"),
		},
		Writes: []string{"nodes", "nodes/status"},
	}
}

func cloudNodeLifecycleRBAC() rbac {
	return rbac{
		Rules: []rule{
			coreRule("The shutdown taint, added and removed.", []string{"nodes"}, "patch"),
			coreRule("A NotReady Node whose instance the cloud says is gone.", []string{"nodes"}, "delete"),
			// The record's name follows the Lease's: this is the one of
			// the default Lease, which the chart's leader-election Role
			// names too.
			{Why: "rare: the deletion cap's record, a ConfigMap beside the leader-election Lease: read\nand rewritten at a leader's second deletion within a window and after a leader change ...",
				PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"},
					ResourceNames: []string{nodelifecycle.RecordName(options.New(nil).LeaderElectName)}, Verbs: []string{"get", "update"}}},
			coreRule("... created by the first deletion (create cannot be limited to a name).", []string{"configmaps"}, "create"),
		},
		Writes: []string{"nodes"},
	}
}

func serviceLBRBAC() rbac {
	return rbac{
		Rules: []rule{
			coreRule("The cleanup finalizer and status.loadBalancer, both through the status\nsubresource, as upstream writes them.",
				[]string{"services/status"}, "patch"),
			coreRule("rare: with --delete-orphaned-load-balancers, a Service is re-read from the API server before its orphaned load balancer is deleted.",
				[]string{"services"}, "get"),
		},
		Writes: []string{"services/status"},
	}
}

func nodeRouteRBAC() rbac {
	return rbac{
		Rules:      []rule{coreRule("The NetworkUnavailable condition once a Node's routes exist.", []string{"nodes/status"}, "patch")},
		Writes:     []string{"nodes/status"},
		RareEvents: "this controller records an event only when a cloud route cannot be created.",
	}
}

func nodeIPAMRBAC() rbac {
	return rbac{
		Rules:      []rule{coreRule("spec.podCIDR(s) of a Node.", []string{"nodes"}, "patch")},
		Writes:     []string{"nodes"},
		RareEvents: "this controller records an event only when a Node's pod CIDR cannot be allocated or is invalid.",
	}
}
