// Package nodeipam is the node-ipam-controller: it gives every Node without
// pod CIDRs one sub-CIDR of each cluster CIDR (--cluster-cidr, one IPv4
// and/or one IPv6 prefix) in spec.podCIDR and spec.podCIDRs, and returns a
// deleted Node's sub-CIDRs to the pool.
//
// The controller owns the in-memory picture of which sub-CIDR belongs to
// which Node (allocator.go). The API server is the source of truth: before
// the first allocation the controller lists every Node from the synced cache
// and occupies the CIDRs they already carry, so a restart or a change of
// leader never hands out a CIDR twice. The API server's own rule that
// spec.podCIDRs cannot change once set is the second line of defence against
// a stale cache: a patch built from an outdated view is rejected, the
// tentative allocation is returned, and the Node is synced again.
//
// The pure bitmap allocator lives in the cidrset subpackage.
package nodeipam
