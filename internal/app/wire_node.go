package app

// startCloudNodeController wires pkg/controllers into the table (nil until the controller exists).
func startCloudNodeController() StartFunc { return nil }

// startCloudNodeLifecycleController wires pkg/controllers into the table (nil until the controller exists).
func startCloudNodeLifecycleController() StartFunc { return nil }
