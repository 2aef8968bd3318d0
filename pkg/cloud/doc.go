// Package cloud owns Stratus' side of the provider contract: the registry of
// providers, the optional extension interfaces a provider may implement on
// top of upstream's cloudprovider.Interface, and the instrumented wrapper
// that every cloud call goes through (metrics, adaptive pacing,
// RetryError handling).
package cloud
