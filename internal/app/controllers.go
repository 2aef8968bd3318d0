package app

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// Controller names, as upstream spells them, and their older aliases.
const (
	CloudNodeController          = "cloud-node-controller"
	CloudNodeLifecycleController = "cloud-node-lifecycle-controller"
	ServiceLBController          = "service-lb-controller"
	NodeRouteController          = "node-route-controller"
	NodeIPAMController           = "node-ipam-controller"
)

// controllerAliases maps upstream's pre-1.28 names to the current ones, so
// that old manifests keep working.
var controllerAliases = map[string]string{
	"cloud-node":           CloudNodeController,
	"cloud-node-lifecycle": CloudNodeLifecycleController,
	"service":              ServiceLBController,
	"route":                NodeRouteController,
	"nodeipam":             NodeIPAMController,
}

// allControllers lists every controller; all are on by default. The network
// controllers additionally need their own flags (--allocate-node-cidrs,
// --configure-cloud-routes) and skip themselves without them, as upstream's do.
var allControllers = []string{
	CloudNodeController,
	CloudNodeLifecycleController,
	ServiceLBController,
	NodeRouteController,
	NodeIPAMController,
}

func controllerList() string { return strings.Join(allControllers, ", ") }

// ControllerContext is what a controller's start function receives.
type ControllerContext struct {
	Manager     manager.Manager
	Cloud       *cloud.Cloud
	Options     *Options
	ClusterName string
}

// StartFunc adds one controller to the manager. It returns false, with a
// reason, when the controller does not apply (the provider lacks the
// capability, or its flags are off); that is logged, not an error.
type StartFunc func(ctx context.Context, cc ControllerContext) (started bool, reason string, err error)

// resolveControllers turns the --controllers list into the set of enabled
// names, with upstream's semantics: '*' enables every default controller,
// 'name' enables one, '-name' disables one; a disabled name wins.
func resolveControllers(spec []string) ([]string, error) {
	known := map[string]bool{}
	for _, n := range allControllers {
		known[n] = true
	}
	canonical := func(n string) (string, error) {
		if a, ok := controllerAliases[n]; ok {
			return a, nil
		}
		if known[n] {
			return n, nil
		}
		return "", fmt.Errorf("--controllers=%s: unknown controller %q (known: %s; aliases: %s)",
			strings.Join(spec, ","), n, controllerList(), aliasList())
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
	var out []string
	for _, n := range allControllers {
		if disabled[n] {
			continue
		}
		if star || enabled[n] {
			out = append(out, n)
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
