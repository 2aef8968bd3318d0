// Command coredns is CoreDNS with only the plugins a cluster's DNS needs
// (kubernetes, cache, health, ready, errors, log, loadbalance, reload),
// built from the Go module proxy so that the test bed's clusters resolve
// Service names as a real cluster's kube-dns does. Leaving out CoreDNS'
// other plugins (cloud DNS backends, etcd, forward) keeps the build short
// and the server unable to reach beyond the machine.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() { coremain.Run() }
