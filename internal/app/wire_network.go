package app

// startNodeRouteController wires pkg/controllers into the table (nil until the controller exists).
func startNodeRouteController() StartFunc { return nil }

// startNodeIPAMController wires pkg/controllers into the table (nil until the controller exists).
func startNodeIPAMController() StartFunc { return nil }
