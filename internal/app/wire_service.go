package app

// startServiceLBController wires pkg/controllers into the table (nil until the controller exists).
func startServiceLBController() StartFunc { return nil }
