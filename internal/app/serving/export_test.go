package serving

// The configz builders and path, for the package's external tests, which
// compare /configz against upstream's with the daemon's own options.
var (
	ComponentConfig = componentConfig
	ConfigzHandler  = configzHandler
)

// ConfigzPath is configzPath, for the external tests.
const ConfigzPath = configzPath
