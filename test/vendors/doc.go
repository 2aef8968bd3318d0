// Package vendors holds the tests that run Stratus as a replacement for
// vendors' upstream-based cloud-controller-managers: with the container
// arguments and RBAC of their published manifests (testdata, copied as
// data), and a binary (cmd/vendor-ccm) that links a stand-in provider under
// each vendor's --cloud-provider name through pkg/ccm, as a vendor's own
// binary links its provider.
package vendors
