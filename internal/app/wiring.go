package app

import (
	"github.com/stratus-ccm/stratus/pkg/controllers/node"
	"github.com/stratus-ccm/stratus/pkg/controllers/nodeipam"
	"github.com/stratus-ccm/stratus/pkg/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/pkg/controllers/route"
	"github.com/stratus-ccm/stratus/pkg/controllers/service"
)

// builtinStarters is the controller table: name → how to start it. Each
// controller package owns its logic; the wire_*.go files only connect it to
// options, one file per controller family so they change independently.
func builtinStarters() map[string]StartFunc {
	return map[string]StartFunc{
		node.ControllerName:          startCloudNodeController,
		nodelifecycle.ControllerName: startCloudNodeLifecycleController,
		service.ControllerName:       startServiceLBController,
		route.ControllerName:         startNodeRouteController,
		nodeipam.ControllerName:      startNodeIPAMController,
	}
}
