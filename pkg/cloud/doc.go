// Package cloud is the provider contract as Stratus extends it: the
// registry of providers, the optional extension interfaces a provider may
// implement on top of upstream's cloudprovider.Interface, the sentinel
// errors providers wrap and controllers recognise, RetryAfter, the
// InstanceIndex that matches Nodes to listed instances, and Cloud, the
// provider as controllers see it. How Stratus calls a provider (metrics,
// pacing, recovery, observe mode) is machinery, kept out of this package.
package cloud
