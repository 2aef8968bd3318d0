package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// ExtraController is a controller a provider's own binary adds. It runs on
// the leader after the provider's Initialize, with the built-in ones.
type ExtraController struct {
	// Name is what --controllers calls it; it must not clash with a
	// built-in name or alias.
	Name string
	// Start adds the controller to the manager.
	Start StartFunc
	// OffByDefault leaves it out of '*': only --controllers=...,name
	// enables it, as upstream's disabled-by-default controllers.
	OffByDefault bool
}

// controllerTable is the built-in table followed by deps.Extra, refusing
// an extra name that is empty, taken or an alias.
func controllerTable(deps Deps) ([]controllerEntry, error) {
	table := builtinControllers()
	taken := map[string]bool{}
	for _, e := range table {
		taken[e.Name] = true
		for _, a := range e.Aliases {
			taken[a] = true
		}
	}
	for _, e := range deps.Extra {
		switch {
		case e.Name == "" || strings.HasPrefix(e.Name, "-") || e.Name == "*" || strings.Contains(e.Name, ","):
			return nil, fmt.Errorf("extra controller %q: a name must be non-empty and contain no ',' nor start with '-' or be '*'", e.Name)
		case taken[e.Name]:
			return nil, fmt.Errorf("extra controller %q: the name is already taken by a built-in controller, an alias or another extra controller", e.Name)
		case e.Start == nil:
			return nil, fmt.Errorf("extra controller %q: a start function is required", e.Name)
		}
		taken[e.Name] = true
		table = append(table, controllerEntry{Controller: options.Controller{Name: e.Name, OffByDefault: e.OffByDefault}, start: e.Start})
	}
	return table, nil
}

// newInformerFactory is the client-go factory offered to providers (upstream
// hands its providers one through InformerUser). It costs nothing until a
// provider asks it for an informer.
func newInformerFactory(restCfg *rest.Config, resync time.Duration) (informers.SharedInformerFactory, error) {
	cfg := rest.CopyConfig(restCfg)
	cfg.UserAgent = options.UserAgent + "/shared-informers"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("shared informers client: %w", err)
	}
	return informers.NewSharedInformerFactory(cs, resync), nil
}

// providerInputs is what a provider's constructor gets.
func providerInputs(o *options.Options, mgr manager.Manager, f informers.SharedInformerFactory) cloud.Inputs {
	return cloud.Inputs{
		ClusterName:     o.ClusterName,
		ClusterCIDR:     o.ClusterCIDR,
		NodeLister:      cacheNodeLister{r: mgr.GetCache()},
		InformerFactory: f,
	}
}

// cacheNodeLister is a client-go NodeLister over the manager's cache, so
// a provider reads the Nodes the controllers already watch instead of
// opening a second watch (and a second copy of every Node in memory). It
// returns the cache's copies, which, like a lister's, must not be changed.
type cacheNodeLister struct{ r client.Reader }

var _ corelisters.NodeLister = cacheNodeLister{}

func (l cacheNodeLister) List(selector labels.Selector) ([]*corev1.Node, error) {
	var list corev1.NodeList
	if err := l.r.List(context.Background(), &list, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("list nodes from cache: %w", err)
	}
	out := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (l cacheNodeLister) Get(name string) (*corev1.Node, error) {
	n := &corev1.Node{}
	if err := l.r.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err // a lister's NotFound, unwrapped, as callers test it with IsNotFound
		}
		return nil, fmt.Errorf("get node %s from cache: %w", name, err)
	}
	return n, nil
}
