package cloud

import (
	"context"
	"fmt"
	"io"
	"sort"

	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// Factory builds a provider from the contents of the --cloud-config file
// (nil when no file was given). It has the same shape as upstream's
// cloudprovider.Factory so that existing providers plug in unchanged.
type Factory func(config io.Reader) (cloudprovider.Interface, error)

// Inputs are what the daemon can hand a provider's constructor: everything
// upstream's cloud initializer could read from its CompletedConfig that a
// provider is known to need. The daemon builds the provider after these
// exist and before it calls the provider's Initialize.
type Inputs struct {
	// Name is the --cloud-provider value the provider was chosen by.
	Name string
	// Config is the contents of --cloud-config; nil when none was given.
	Config io.Reader
	// ClusterName is --cluster-name, the prefix providers tag resources with.
	ClusterName string
	// ClusterCIDR is --cluster-cidr as given (comma-separated for dual
	// stack), empty when unset: what hcloud's NewCloud takes as its cidr.
	ClusterCIDR string
	// NodeLister reads Nodes from the daemon's shared cache, so a provider
	// that needs Nodes adds no watch of its own. Its reads block until that
	// cache has synced, which happens before Initialize on the leader, so
	// use it from Initialize on, not in the constructor itself.
	NodeLister corelisters.NodeLister
	// InformerFactory is a client-go factory on the daemon's API
	// connection, for providers that want informers of other kinds. As
	// upstream does, the daemon starts it on the leader after Initialize
	// and after the controllers start; informers requested from it before
	// then are started there.
	InformerFactory informers.SharedInformerFactory
}

// Constructor builds a provider from what the daemon can give it.
type Constructor func(ctx context.Context, in Inputs) (cloudprovider.Interface, error)

// FromFactory adapts an upstream-shaped Factory, which reads only the
// cloud config, to a Constructor.
func FromFactory(f Factory) Constructor {
	if f == nil {
		return nil
	}
	return func(_ context.Context, in Inputs) (cloudprovider.Interface, error) { return f(in.Config) }
}

// Registry maps provider names to constructors. It is built in main and
// passed down, so that tests can build their own; names it does not hold
// fall back to upstream's global registry, where providers that call
// cloudprovider.RegisterCloudProvider from an init() end up.
type Registry struct {
	constructors map[string]Constructor
	checks       map[string]ConfigCheck
}

// ConfigCheck validates a provider's --cloud-config contents without
// building the provider or calling the cloud, so that the daemon can report
// its errors together with the flags' before it seeks the leader lease.
type ConfigCheck func(config io.Reader) error

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{constructors: map[string]Constructor{}, checks: map[string]ConfigCheck{}}
}

// Register adds a provider built from its cloud config alone. Registering
// a name twice is a programming error reported as an error rather than a
// panic, so main can say which name.
func (r *Registry) Register(name string, f Factory) error {
	if f == nil {
		return fmt.Errorf("register cloud provider %q: name and factory are required", name)
	}
	return r.RegisterConstructor(name, FromFactory(f))
}

// RegisterConstructor adds a provider whose constructor takes what the
// daemon can give it (see Inputs).
func (r *Registry) RegisterConstructor(name string, c Constructor) error {
	if name == "" || c == nil {
		return fmt.Errorf("register cloud provider %q: name and constructor are required", name)
	}
	if _, ok := r.constructors[name]; ok {
		return fmt.Errorf("register cloud provider %q: already registered", name)
	}
	r.constructors[name] = c
	return nil
}

// RegisterConfigCheck adds the config check of a registered provider.
func (r *Registry) RegisterConfigCheck(name string, check ConfigCheck) error {
	if _, ok := r.constructors[name]; !ok || check == nil {
		return fmt.Errorf("register cloud config check %q: a registered provider and a check are required", name)
	}
	r.checks[name] = check
	return nil
}

// CheckConfig runs the named provider's config check; nil when it has none.
func (r *Registry) CheckConfig(name string, config io.Reader) error {
	if check, ok := r.checks[name]; ok {
		return check(config)
	}
	return nil
}

// Names lists the providers registered here (not the upstream global ones,
// which upstream does not expose).
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.constructors))
	for n := range r.constructors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Build builds the provider in.Name, consulting this registry first and
// then upstream's global registry (whose factories get in.Config only).
func (r *Registry) Build(ctx context.Context, in Inputs) (cloudprovider.Interface, error) {
	name := in.Name
	if c, ok := r.constructors[name]; ok {
		p, err := c(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("cloud provider %q: %w", name, err)
		}
		if p == nil {
			return nil, fmt.Errorf("cloud provider %q: constructor returned no provider", name)
		}
		return p, nil
	}
	p, err := cloudprovider.GetCloudProvider(name, in.Config)
	if err != nil {
		return nil, fmt.Errorf("cloud provider %q: %w", name, err)
	}
	if p == nil {
		return nil, fmt.Errorf("%w %q (known: %v, plus any registered with cloudprovider.RegisterCloudProvider)",
			ErrUnknownProvider, name, r.Names())
	}
	return p, nil
}
