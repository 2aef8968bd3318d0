package localcloud

import (
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/cloud"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// ProviderName is the --cloud-provider value selecting this provider.
const ProviderName = "localcloud"

// ProviderIDPrefix starts every providerID this provider reports.
const ProviderIDPrefix = ProviderName + "://"

// Cloud implements cloudprovider.Interface over the localcloud API.
type Cloud struct {
	client      *lcclient.Client
	clusterName string
	instances   *instances
	lbs         *loadBalancers
	routes      *routes
}

var (
	_ cloudprovider.Interface    = (*Cloud)(nil)
	_ cloud.InstanceLister       = (*Cloud)(nil)
	_ cloud.LoadBalancerLister   = (*Cloud)(nil)
	_ cloud.ModificationLister   = (*Cloud)(nil)
	_ cloudprovider.InstancesV2  = (*instances)(nil)
	_ cloudprovider.LoadBalancer = (*loadBalancers)(nil)
	_ cloudprovider.Routes       = (*routes)(nil)
)

// New is the registry factory: it receives the --cloud-config contents.
func New(config io.Reader) (cloudprovider.Interface, error) {
	if config == nil {
		return nil, errors.New("localcloud: --cloud-config is required (url, tokenFile or token, clusterName)")
	}
	cfg, err := ParseConfig(config)
	if err != nil {
		return nil, fmt.Errorf("localcloud: %w", err)
	}
	return NewFromConfig(cfg)
}

// CheckConfig validates the --cloud-config contents without building the
// provider, for the daemon's startup validation.
func CheckConfig(config io.Reader) error {
	if config == nil {
		return errors.New("localcloud: --cloud-config is required (url, tokenFile or token, clusterName)")
	}
	if _, err := ParseConfig(config); err != nil {
		return fmt.Errorf("localcloud: %w", err)
	}
	return nil
}

// NewFromConfig builds the provider from a parsed configuration.
func NewFromConfig(cfg Config) (*Cloud, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("localcloud: %w", err)
	}
	token, err := cfg.resolveToken()
	if err != nil {
		return nil, fmt.Errorf("localcloud: %w", err)
	}
	opts := []lcclient.Option{lcclient.WithUserAgent(UserAgent())}
	if cfg.MaxRetries >= 0 {
		opts = append(opts, lcclient.WithMaxRetries(cfg.MaxRetries))
	}
	if cfg.RateLimitQPS > 0 {
		opts = append(opts, lcclient.WithRateLimit(cfg.RateLimitQPS, max(1, cfg.RateLimitBurst)))
	}
	c, err := lcclient.New(cfg.URL, token, opts...)
	if err != nil {
		return nil, fmt.Errorf("localcloud: %w", err)
	}
	cl := NewWithClient(c, cfg.ClusterName)
	cl.lbs.proxyHealthPort = cfg.KubeProxyHealthPort
	cl.lbs.endpointTargets = cfg.EndpointTargets
	if len(cfg.IPFamilies) > 0 {
		cl.lbs.families = cfg.IPFamilies
	}
	return cl, nil
}

// NewWithClient builds the provider around an existing client, for tests
// and the sandbox.
func NewWithClient(c *lcclient.Client, clusterName string) *Cloud {
	if clusterName == "" {
		clusterName = DefaultClusterName
	}
	return &Cloud{
		client: c, clusterName: clusterName,
		instances: &instances{client: c},
		lbs:       &loadBalancers{client: c, defaultCluster: clusterName, families: []corev1.IPFamily{corev1.IPv4Protocol}},
		routes:    &routes{client: c, defaultCluster: clusterName, names: newNameIndex(c)},
	}
}

// WithEndpointTargets says, before the provider is used, that the cloud's
// load balancers reach pod addresses (Config.EndpointTargets), for a
// provider made with NewWithClient.
func (c *Cloud) WithEndpointTargets() *Cloud {
	c.lbs.endpointTargets = true
	return c
}

// ReportThrottlesTo implements cloud.ThrottleReporter: the client retries
// 429 answers itself, and the CCM's pacing must hear of each.
func (c *Cloud) ReportThrottlesTo(f func(retryAfter time.Duration)) { c.client.OnThrottle(f) }

// PaceRequestsWith implements cloud.RequestPacer: a load balancer's
// creation is several requests, and the client retries 429 answers
// itself, so the CCM paces the client's requests rather than the calls.
func (c *Cloud) PaceRequestsWith(g cloud.RequestGate) {
	c.client.SetRequestGate(lcclient.RequestGate(g))
}

// Initialize needs nothing: the provider has no informers or goroutines.
func (c *Cloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

// LoadBalancer returns the load balancer implementation.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c.lbs, true }

// Instances is not implemented: InstancesV2 supersedes it.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 returns the instances implementation.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.instances, true }

// Zones is not needed: InstanceMetadata carries zone and region.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters is not implemented.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes returns the routes implementation.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return c.routes, true }

// ProviderName returns "localcloud".
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID is true: load balancers and routes are scoped by cluster name.
func (c *Cloud) HasClusterID() bool { return true }

func clusterOr(name, def string) string {
	if name == "" {
		return def
	}
	return name
}

// withQuota marks a localcloud quota error with cloud.ErrQuotaExceeded, so
// that controllers recognise it without knowing this provider.
func withQuota(err error) error {
	if errors.Is(err, lcclient.ErrQuotaExceeded) && !errors.Is(err, cloud.ErrQuotaExceeded) {
		return fmt.Errorf("%w: %w", cloud.ErrQuotaExceeded, err)
	}
	return err
}

// markThrottled makes a throttled call's error a RetryError carrying the
// cloud's Retry-After (the controllers requeue after it) and an
// ErrThrottled (the instrumented wrapper slows down), while keeping the client's error in the chain (so
// errors.Is(err, lcclient.ErrRateLimited) still holds). The client has
// already retried within its own budget by then.
func markThrottled(err *error) {
	if *err == nil {
		return
	}
	if d, ok := lcclient.RetryAfter(*err); ok {
		if _, already := cloud.RetryAfter(*err); !already {
			*err = fmt.Errorf("%w: %w: %w", cloudproviderapi.NewRetryError("localcloud: throttled by the cloud", max(d, time.Second)), cloud.ErrThrottled, *err)
		}
	}
}
