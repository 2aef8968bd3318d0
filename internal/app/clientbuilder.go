package app

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/internal/app/options"
)

// clientBuilder hands providers clients built from the manager's config,
// with the requesting component named in the user agent.
type clientBuilder struct{ cfg *rest.Config }

var _ cloudprovider.ControllerClientBuilder = clientBuilder{}

func newClientBuilder(cfg *rest.Config) clientBuilder { return clientBuilder{cfg: cfg} }

func (b clientBuilder) Config(name string) (*rest.Config, error) {
	c := rest.CopyConfig(b.cfg)
	c.UserAgent = rest.DefaultKubernetesUserAgent() + "/" + options.UserAgent + "/" + name
	return c, nil
}

// ConfigOrDie cannot fail here; the name is upstream's.
func (b clientBuilder) ConfigOrDie(name string) *rest.Config {
	c, _ := b.Config(name)
	return c
}

func (b clientBuilder) Client(name string) (kubernetes.Interface, error) {
	c, _ := b.Config(name)
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", name, err)
	}
	return cs, nil
}

// ClientOrDie is part of upstream's contract; a provider that calls it gets
// a panic only for a config that the manager itself already accepted.
func (b clientBuilder) ClientOrDie(name string) kubernetes.Interface {
	cs, err := b.Client(name)
	if err != nil {
		panic(err)
	}
	return cs
}
