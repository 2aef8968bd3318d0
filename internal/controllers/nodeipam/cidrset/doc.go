// Package cidrset owns the bookkeeping of node pod CIDRs inside one cluster
// CIDR: it splits the cluster CIDR (IPv4 or IPv6) into equal sub-CIDRs of a
// fixed prefix length and records which of them are taken.
//
// It is a pure data structure on the standard library only, with no
// Kubernetes types, so that it can be tested and fuzzed exhaustively on its
// own. The node-ipam controller builds one CIDRSet per cluster CIDR (two for
// dual-stack), replays the podCIDRs already on Nodes into it with Occupy,
// excludes the service cluster IP range with Reserve, and then hands out
// AllocateNext results to Nodes that have none.
//
// A sub-CIDR is in one of three states:
//
//   - free: AllocateNext may return it;
//   - used: returned by AllocateNext or marked with Occupy; Release frees it;
//   - reserved: excluded with Reserve; Release never frees it, so deleting a
//     Node whose (misconfigured) podCIDR overlapped the service range cannot
//     put that range back into circulation.
//
// The split is bounded to MaxSubnetBits (16) bits, at most 65,536
// sub-CIDRs: the bound upstream's node IPAM enforces on the same flags, and
// one that keeps each bitmap at most 8 KiB.
//
// A CIDRSet is safe for concurrent use. Its lock only makes each single
// call atomic: a caller that needs several calls to take effect together
// (an IPv4 and an IPv6 allocation for one dual-stack Node, with rollback
// when the second fails) must still hold its own lock around them.
package cidrset
