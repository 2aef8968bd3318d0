package objcache

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ManagerOptions are the controller-runtime manager options the daemon and
// every test harness share, so that a controller under test runs as it
// does in the daemon: the core scheme (scheme, when nil), none of
// controller-runtime's own metrics or probe servers (the daemon serves
// both on its secure port), objects stripped before they are cached
// (Transform: managedFields everywhere, which roughly halves the
// memory a cached Node takes, and the Node status fields no controller
// reads). skipNames lets one process build a controller name more than
// once, as tests and whole-daemon tests do; controller-runtime's check
// guards its process-wide metrics, which they do not read. The daemon adds
// leader election, its logger and resync period on top.
func ManagerOptions(scheme *runtime.Scheme, skipNames bool) (manager.Options, error) {
	if scheme == nil {
		scheme = runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return manager.Options{}, fmt.Errorf("scheme: %w", err)
		}
	}
	return manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultTransform: Transform()},
		Controller:             config.Controller{SkipNameValidation: ptr.To(skipNames)},
	}, nil
}
