// Package store persists localcloud's resources in bbolt and keeps an
// in-memory index of them. Every mutation is committed to bbolt before it
// is applied in memory and before the caller can acknowledge it, so a crash
// never loses an acknowledged write and never exposes a half-written one.
// Checks that span resources (quotas, unique names, address allocation)
// run under the same lock as the write, so concurrent requests cannot race
// past them.
//
// Each kind of record (instances, load balancers, routes) is a table: a
// bbolt bucket and its in-memory copy, loaded, looked up, paged and
// committed the same way (table.go); a kind's own files hold only its
// rules and the indexes it keeps beside its records. The whole file is
// read before anything is written to it, so a corrupt file is reported,
// naming it, and left as it was.
package store
