package options

// IPAMEnabled exposes ipamEnabled to the package's external tests.
func IPAMEnabled(spec []string, known []Controller) bool { return ipamEnabled(spec, known) }
