// Package store persists localcloud's resources in bbolt and keeps an
// in-memory index of them. Every mutation is committed to bbolt before it
// is applied in memory and before the caller can acknowledge it, so a crash
// never loses an acknowledged write and never exposes a half-written one.
// Checks that span resources (quotas, unique names, address allocation)
// run under the same lock as the write, so concurrent requests cannot race
// past them.
package store
