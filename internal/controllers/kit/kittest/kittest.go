// Package kittest holds the test helpers every controller package shares:
// the check that a controller's Watches agree with what its
// SetupWithManager really reads through the manager's cache.
package kittest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// RequireWatches adds a controller to a running manager with setup and
// fails t unless the kinds it reads through the manager's cache (informers,
// indexes, cached reads) are exactly want, the controller package's
// Watches. The daemon starts the informers of Watches on a standby before
// it can take the lease, so a kind read but not declared is a cold
// informer on failover, and a kind declared but not read is memory spent
// for nothing.
// The cache is a fake one: no API server is needed.
func RequireWatches(t *testing.T, want []client.Object, setup func(context.Context, manager.Manager) error) {
	t.Helper()
	wantKinds := kindNames(t, want)
	rec := newRecordingCache(wantKinds)
	mgr, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{
		Scheme:                 clientgoscheme.Scheme,
		NewCache:               func(*rest.Config, cache.Options) (cache.Cache, error) { return rec, nil },
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("manager: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if err := setup(ctx, mgr); err != nil {
		cancel()
		t.Fatalf("SetupWithManager: %v", err)
	}
	// Sources start together when the controller starts; once every
	// declared kind has been asked for, an undeclared one has been too.
	// Past the deadline the comparison below says what is missing.
	timeout := time.NewTimer(30 * time.Second)
	select {
	case <-rec.covered:
	case <-timeout.C:
	}
	timeout.Stop()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("manager: %v", err)
	}
	if got := rec.kinds(); !slices.Equal(got, wantKinds) {
		t.Errorf("the controller reads %v through the cache, but its Watches declare %v: make Watches say what SetupWithManager watches", got, wantKinds)
	}
}

func kindNames(t *testing.T, objs []client.Object) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		gvk, err := apiutil.GVKForObject(o, clientgoscheme.Scheme)
		if err != nil {
			t.Fatalf("kind of %T: %v", o, err)
		}
		out = append(out, gvk.Kind)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// recordingCache is a fake cache that records the kind of every informer,
// index and read asked of it, and closes covered once every kind in want
// has been asked for, so that the test waits for exactly that rather than
// polling. The fake it wraps is not safe for concurrent use; the mutex
// makes it so.
type recordingCache struct {
	mu      sync.Mutex
	fake    *informertest.FakeInformers
	seen    map[string]bool
	want    []string
	covered chan struct{}
	closed  bool
}

func newRecordingCache(want []string) *recordingCache {
	c := &recordingCache{fake: &informertest.FakeInformers{Scheme: clientgoscheme.Scheme}, seen: map[string]bool{},
		want: want, covered: make(chan struct{})}
	c.checkCovered()
	return c
}

var _ cache.Cache = (*recordingCache)(nil)

func (c *recordingCache) record(obj runtime.Object) {
	gvk, err := apiutil.GVKForObject(obj, clientgoscheme.Scheme)
	if err != nil {
		panic(fmt.Sprintf("kind of %T: %v", obj, err)) // only scheme types reach a controller's cache
	}
	c.mark(strings.TrimSuffix(gvk.Kind, "List"))
}

// mark records kind; the caller holds mu.
func (c *recordingCache) mark(kind string) {
	c.seen[kind] = true
	c.checkCovered()
}

// checkCovered closes covered, once, when every wanted kind is seen; the
// caller holds mu (or is the constructor).
func (c *recordingCache) checkCovered() {
	if c.closed {
		return
	}
	for _, k := range c.want {
		if !c.seen[k] {
			return
		}
	}
	c.closed = true
	close(c.covered)
}

func (c *recordingCache) kinds() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.seen))
	for k := range c.seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (c *recordingCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(obj)
	return c.fake.GetInformer(ctx, obj, opts...)
}

func (c *recordingCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mark(gvk.Kind)
	return c.fake.GetInformerForKind(ctx, gvk, opts...)
}

func (c *recordingCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fake.RemoveInformer(ctx, obj)
}

func (c *recordingCache) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func (c *recordingCache) WaitForCacheSync(ctx context.Context) bool {
	return c.fake.WaitForCacheSync(ctx)
}

func (c *recordingCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(obj)
	return c.fake.IndexField(ctx, obj, field, extract)
}

func (c *recordingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(obj)
	return c.fake.Get(ctx, key, obj, opts...)
}

func (c *recordingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(list)
	return c.fake.List(ctx, list, opts...)
}

// Recovery is a cloud.RecoveryNotifier a test fires by hand.
type Recovery struct {
	mu  sync.Mutex
	fns []func()
}

// OnRecovered implements cloud.RecoveryNotifier.
func (r *Recovery) OnRecovered(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fns = append(r.fns, fn)
}

// Subscribers returns how many functions subscribed.
func (r *Recovery) Subscribers() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.fns)
}

// Fire tells every subscriber that the cloud answers again.
func (r *Recovery) Fire() {
	r.mu.Lock()
	fns := append([]func(){}, r.fns...)
	r.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// HTTPError is a cloud's error answer with an HTTP status, as SDKs give
// them (HTTPStatusCode): 5xx and 429 are the cloud failing
// (cloud.IsCloudFault), another 4xx the request's own refusal.
type HTTPError int

func (e HTTPError) Error() string { return fmt.Sprintf("the cloud answered HTTP %d", int(e)) }

// HTTPStatusCode is the status, read by cloud.IsCloudFault.
func (e HTTPError) HTTPStatusCode() int { return int(e) }
