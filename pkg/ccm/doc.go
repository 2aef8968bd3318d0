// Package ccm is the entry point for provider authors: it builds the
// Stratus cloud-controller-manager command around your provider, as
// upstream's k8s.io/cloud-provider/app.NewCloudControllerManagerCommand
// does, with every flag, controller, leader election and server of the
// stratus binary.
//
// A provider's main is one call:
//
//	func main() {
//		ccm.Main(ccm.Config{
//			Providers: []ccm.Provider{{Name: "mycloud", Factory: mycloud.New}},
//		})
//	}
//
// Providers that register themselves with upstream's
// cloudprovider.RegisterCloudProvider in an init() need no entry in
// Providers: a blank import of their package is enough, and
// --cloud-provider picks them by name. A provider whose constructor needs
// more than its cloud config (the cluster CIDR, the cluster name, a node
// lister or informers) uses Provider.New, which receives Inputs.
//
// Config.FlagDefaults sets the defaults of the daemon's flags and
// Config.Flags adds the provider's own, as upstream-based mains set
// options before NewCloudControllerManagerCommand and pass it
// additionalFlags.
//
// Extra controllers of the provider's own run beside the built-in ones,
// on the leader, after the provider's Initialize; --controllers enables
// and disables them by name.
//
// docs/providers.md walks through examples/fake-provider, a module that
// builds its binary with this package.
package ccm
