package app

// builtinStarters is the controller table: name → how to start it. Each
// controller package owns its logic; the wire_*.go files only connect it to
// options, one file per controller family so they change independently.
func builtinStarters() map[string]StartFunc {
	all := map[string]StartFunc{
		CloudNodeController:          startCloudNodeController(),
		CloudNodeLifecycleController: startCloudNodeLifecycleController(),
		ServiceLBController:          startServiceLBController(),
		NodeRouteController:          startNodeRouteController(),
		NodeIPAMController:           startNodeIPAMController(),
	}
	for name, f := range all {
		if f == nil {
			delete(all, name)
		}
	}
	return all
}
