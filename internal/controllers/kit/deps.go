package kit

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stratus-ccm/stratus/internal/explain"
	"github.com/stratus-ccm/stratus/internal/ownership"
	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// Deps are the collaborators every controller takes. Each controller's
// own Deps embeds them and adds the provider interfaces it calls, so that
// the daemon, the tests and a new controller wire the shared part one way.
type Deps struct {
	// Client reads (from the manager's cache in production) and writes
	// the controller's objects; required.
	Client client.Client
	// Recorder emits events on the objects; nil emits none (Recorder).
	Recorder events.EventRecorder
	// Registerer receives the controller's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Clock paces and dates the controller's work; nil is the real clock.
	Clock clock.Clock
	// Recovery, when set, tells the controller that the cloud answers
	// again after an outage, so that what failed during it is retried at
	// once instead of sitting out the backoff the outage built up.
	Recovery cloud.RecoveryNotifier
	// Pushback, when set, says whether the cloud pushed back lately
	// (throttled, held calls in the client-side pacing, or answered far
	// slower than usual): controllers batch their work while it does and
	// act at once while it does not. Nil batches always.
	Pushback PushbackReporter
	// Explain, when set, receives the record of the controller's work on
	// each object, for `stratus explain`; nil records nothing.
	Explain *explain.Store
	// Ownership says which Nodes are the provider's in a hybrid cluster.
	// The zero value owns every Node, as upstream's controllers assume.
	Ownership ownership.Policy
}

// Resolve checks d for the controller named name and returns it ready for
// use: the client writes as the controller (its field manager), the
// recorder and the clock are never nil. A controller calls it first in
// New and reads only the resolved copy.
func (d Deps) Resolve(name string) (Deps, error) {
	if d.Client == nil {
		return Deps{}, fmt.Errorf("%s: %w", name, errNoClient)
	}
	d.Client = client.WithFieldOwner(d.Client, name)
	d.Recorder = Recorder(d.Recorder)
	d.Clock = Clock(d.Clock)
	return d, nil
}

// PushbackReporter is the cloud wrapper's view of whether the cloud
// pushes back (cloudwrap.Cloud.Pushback).
type PushbackReporter interface {
	Pushback() bool
}

// Batching reports whether work should be batched now: while the cloud
// pushes back, or always when nothing reports it.
func (d Deps) Batching() bool {
	return d.Pushback == nil || d.Pushback.Pushback()
}

var errNoClient = errors.New("a client is required")

// OrDefault is the controllers' one default style: a setting left zero
// (or negative, which no setting allows) takes the controller's named
// Default constant, so that the defaults are read in one place per
// controller and documented there.
func OrDefault[T ~int | ~int64 | ~float64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
