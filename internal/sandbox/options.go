package sandbox

import (
	"errors"
	"fmt"
	"time"
)

// Options configure a sandbox run.
type Options struct {
	StateDir string
	BinDir   string
	Nodes    int
	Zones    int
	NoDemo   bool

	// localcloud realism, so a user can watch the CCM under a slow or
	// throttled cloud.
	Latency   time.Duration
	RateLimit float64
	RateBurst int

	APIServerPort  int
	EtcdPort       int
	LocalcloudPort int
	CCMPort        int

	ClusterCIDR string
	// ReadyTimeout bounds the wait for nodes and the demo.
	ReadyTimeout time.Duration
	// CCMArgs are extra flags for the controller manager.
	CCMArgs []string
}

// DefaultOptions returns the defaults of `stratus sandbox`.
func DefaultOptions() Options {
	return Options{
		StateDir:       ".stratus/sandbox",
		Nodes:          3,
		Zones:          3,
		RateBurst:      10,
		APIServerPort:  16443,
		EtcdPort:       12379,
		LocalcloudPort: 18787,
		CCMPort:        10258,
		// Room for 16,384 nodes at /24, clear of the apiserver's default
		// Service range (10.0.0.0/24).
		ClusterCIDR:  "10.64.0.0/10",
		ReadyTimeout: 10 * time.Minute,
	}
}

// Validate reports every bad value, naming the flag.
func (o Options) Validate() error {
	var errs []error
	if o.StateDir == "" {
		errs = append(errs, errors.New(`--state-dir="": must not be empty`))
	}
	if o.Nodes < 1 {
		errs = append(errs, fmt.Errorf("--nodes=%d: must be at least 1", o.Nodes))
	}
	if o.Nodes > 5000 {
		errs = append(errs, fmt.Errorf("--nodes=%d: at most 5000 fit in localcloud's default address pool and this machine", o.Nodes))
	}
	if o.Zones < 1 || o.Zones > 26 {
		errs = append(errs, fmt.Errorf("--zones=%d: must be between 1 and 26", o.Zones))
	}
	if o.Latency < 0 {
		errs = append(errs, fmt.Errorf("--latency=%v: must not be negative", o.Latency))
	}
	if o.RateLimit < 0 {
		errs = append(errs, fmt.Errorf("--rate-limit=%v: must not be negative", o.RateLimit))
	}
	if o.RateLimit > 0 && o.RateBurst < 1 {
		errs = append(errs, fmt.Errorf("--rate-burst=%d: must be at least 1 when --rate-limit is set", o.RateBurst))
	}
	if o.ReadyTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--ready-timeout=%v: must be greater than 0", o.ReadyTimeout))
	}
	ports := map[string]int{"apiserver-port": o.APIServerPort, "etcd-port": o.EtcdPort, "localcloud-port": o.LocalcloudPort, "ccm-port": o.CCMPort}
	seen := map[int]string{}
	for flag, p := range ports {
		if p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("--%s=%d: must be between 1 and 65535", flag, p))
			continue
		}
		if other, dup := seen[p]; dup {
			errs = append(errs, fmt.Errorf("--%s=%d: same port as --%s", flag, p, other))
		}
		seen[p] = flag
	}
	return errors.Join(errs...)
}
