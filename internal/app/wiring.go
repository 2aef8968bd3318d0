package app

// builtinStarters is the controller table: name → how to start it. Each
// controller package owns its logic; this file only connects it to options.
func builtinStarters() map[string]StartFunc {
	return map[string]StartFunc{}
}
