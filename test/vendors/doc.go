// Package vendors holds the tests that run Stratus as a replacement for
// vendors' upstream-based cloud-controller-managers: with the container
// arguments and RBAC of their published manifests (testdata, copied as
// data), and a binary (cmd/vendor-ccm) that links the vendor doubles of
// package profile under each vendor's --cloud-provider name through
// pkg/ccm, as a vendor's own binary links its provider; the upstream peer
// (bin/upstream-ccm, upstream's app) links the same doubles, so a profile
// test runs both on the same inputs and compares what they do.
package vendors
