package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/internal/app/options"
)

// clientBuilder hands providers clients built from the manager's config,
// with the requesting component named in the user agent; with
// --use-service-account-credentials, clients of the ServiceAccount the
// provider names instead (created when missing), as upstream's app hands
// its provider the same ServiceAccount-based builder as its controllers:
// a provider written for it (AWS' asks for "aws-cloud-provider") then
// acts, and records its events, under the same identity here.
type clientBuilder struct {
	cfg *rest.Config
	// ctx bounds the ServiceAccounts' token requests; ids is nil, or
	// without ServiceAccounts, to use cfg.
	// The builder's interface has no context, and tokens are minted long
	// after it is handed over.
	ctx context.Context
	ids *identities
}

var _ cloudprovider.ControllerClientBuilder = clientBuilder{}

func newClientBuilder(cfg *rest.Config) clientBuilder { return clientBuilder{cfg: cfg} }

// withServiceAccounts makes the builder's clients ServiceAccounts when ids
// has them (--use-service-account-credentials).
func (b clientBuilder) withServiceAccounts(ctx context.Context, ids *identities) clientBuilder {
	if ids != nil && ids.sas != nil {
		b.ctx, b.ids = ctx, ids
	}
	return b
}

func (b clientBuilder) Config(name string) (*rest.Config, error) {
	if b.ids != nil {
		c, _, err := b.ids.config(b.ctx, name)
		if err != nil {
			return nil, fmt.Errorf("client for %s: %w", name, err)
		}
		return c, nil
	}
	c := rest.CopyConfig(b.cfg)
	c.UserAgent = rest.DefaultKubernetesUserAgent() + "/" + options.UserAgent + "/" + name
	return c, nil
}

// ConfigOrDie is part of upstream's contract: it panics where Config
// fails, which only a ServiceAccount the daemon can neither find, create
// nor mint a token for makes it do (upstream's ends the process there).
func (b clientBuilder) ConfigOrDie(name string) *rest.Config {
	c, err := b.Config(name)
	if err != nil {
		panic(err)
	}
	return c
}

func (b clientBuilder) Client(name string) (kubernetes.Interface, error) {
	c, err := b.Config(name)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", name, err)
	}
	return cs, nil
}

// ClientOrDie is part of upstream's contract; a provider that calls it gets
// a panic where Client fails (see ConfigOrDie).
func (b clientBuilder) ClientOrDie(name string) kubernetes.Interface {
	cs, err := b.Client(name)
	if err != nil {
		panic(err)
	}
	return cs
}
