// Package objcache is what the controllers' shared informer cache holds and
// how it is built: the objects stripped before they are cached (Transform:
// managedFields everywhere, and the Node status fields StrippedNodeStatus
// names), the strings and resource lists Nodes repeat shared through one
// bounded table per cache (intern.go), and ManagerOptions, the
// controller-runtime manager options the daemon and every test harness
// share so that a controller under test reads the cache it reads in the
// daemon. It is apart from the kit because no controller calls it: the
// daemon and the harnesses install it under them.
package objcache
