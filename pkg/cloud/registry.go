package cloud

import (
	"errors"
	"fmt"
	"io"
	"sort"

	cloudprovider "k8s.io/cloud-provider"
)

// Factory builds a provider from the contents of the --cloud-config file
// (nil when no file was given). It has the same shape as upstream's
// cloudprovider.Factory so that existing providers plug in unchanged.
type Factory func(config io.Reader) (cloudprovider.Interface, error)

// ErrUnknownProvider is returned when neither the Stratus registry nor
// upstream's global registry knows a provider name.
var ErrUnknownProvider = errors.New("unknown cloud provider")

// Registry maps provider names to factories. It is built in main and passed
// down, so that tests can build their own; names it does not hold fall back
// to upstream's global registry, where providers that call
// cloudprovider.RegisterCloudProvider from an init() end up.
type Registry struct {
	factories map[string]Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{factories: map[string]Factory{}}
}

// Register adds a provider. Registering a name twice is a programming error
// reported as an error rather than a panic, so main can say which name.
func (r *Registry) Register(name string, f Factory) error {
	if name == "" || f == nil {
		return fmt.Errorf("register cloud provider %q: name and factory are required", name)
	}
	if _, ok := r.factories[name]; ok {
		return fmt.Errorf("register cloud provider %q: already registered", name)
	}
	r.factories[name] = f
	return nil
}

// Names lists the providers registered here (not the upstream global ones,
// which upstream does not expose).
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.factories))
	for n := range r.factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New builds the named provider, consulting this registry first and then
// upstream's global registry.
func (r *Registry) New(name string, config io.Reader) (cloudprovider.Interface, error) {
	if f, ok := r.factories[name]; ok {
		p, err := f(config)
		if err != nil {
			return nil, fmt.Errorf("cloud provider %q: %w", name, err)
		}
		if p == nil {
			return nil, fmt.Errorf("cloud provider %q: factory returned no provider", name)
		}
		return p, nil
	}
	p, err := cloudprovider.GetCloudProvider(name, config)
	if err != nil {
		return nil, fmt.Errorf("cloud provider %q: %w", name, err)
	}
	if p == nil {
		return nil, fmt.Errorf("%w %q (known: %v, plus any registered with cloudprovider.RegisterCloudProvider)",
			ErrUnknownProvider, name, r.Names())
	}
	return p, nil
}
