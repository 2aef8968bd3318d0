// Package route is the node-route-controller: it programs one cloud route
// per pod CIDR of every Node that has pod CIDRs and a providerID (the pod
// CIDR routed to the Node's instance), deletes routes in the cluster's route
// table that no Node accounts for, and keeps each Node's NetworkUnavailable
// condition saying whether its routes exist.
//
// The controller reconciles the whole table at once, as upstream's does: one
// ListRoutes call per pass, then bounded parallel deletes and creates. A pass
// runs shortly after Node events that can change routes (coalesced into one
// pass) and at least every reconcile period. A route whose creation failed
// (a full route table, an instance the cloud cannot find) is not retried on
// every pass: it backs off per CIDR, starting at one period, and the backoff
// is cleared when a delete frees room in the table.
//
// Only routes inside the cluster CIDRs are considered the cluster's own, so
// routes an operator added to the same table by hand survive. Blackhole
// routes (the target instance is gone) are deleted and, if a Node still
// needs the CIDR, created again in the same pass.
package route
