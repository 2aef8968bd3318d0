// Package migration holds the end-to-end tests of switching between the
// upstream cloud-controller-manager (bin/upstream-ccm, k8s.io/cloud-provider's
// app with the localcloud provider) and Stratus: live takeover in both
// directions, leader migration side by side, and observe mode. Everything
// runs as real processes against a real API server, kwok and localcloud.
package migration
