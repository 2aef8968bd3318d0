package service

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
)

// lbPhase is where one Service's load balancer stands after its last
// sync, as the load-balancer gauge counts it.
type lbPhase string

// The phases; "" is a Service the controller holds no load balancer for.
const (
	// phasePending: no ingress yet (the cloud is provisioning, or asked to
	// come back later).
	phasePending lbPhase = "pending"
	// phaseFailing: the last sync failed with an error.
	phaseFailing lbPhase = "failing"
	// phaseServing: the ingress is published and the last sync succeeded
	// or was only told to come back later.
	phaseServing lbPhase = "serving"
)

// phaseTracker keeps each Service's phase and the gauge counting them,
// updated by the difference so that a sync costs O(1).
type phaseTracker struct {
	mu    sync.Mutex
	byKey map[types.NamespacedName]lbPhase
	gauge *prometheus.GaugeVec
}

func newPhaseTracker(g *prometheus.GaugeVec) *phaseTracker {
	// Every state is exported from the start, at 0, so that a dashboard
	// and an alert see a series before the first failure.
	for _, p := range []lbPhase{phasePending, phaseFailing, phaseServing} {
		g.WithLabelValues(string(p))
	}
	return &phaseTracker{byKey: map[types.NamespacedName]lbPhase{}, gauge: g}
}

// set records key's phase; "" forgets the Service.
func (t *phaseTracker) set(key types.NamespacedName, p lbPhase) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.byKey[key]
	if old == p {
		return
	}
	if old != "" {
		t.gauge.WithLabelValues(string(old)).Dec()
	}
	if p == "" {
		delete(t.byKey, key)
		return
	}
	t.byKey[key] = p
	t.gauge.WithLabelValues(string(p)).Inc()
}

// phaseAfter tells key's phase from the outcome of its sync and the record
// the sync left: a sync that found the Service gone, not wanting a load
// balancer, or served elsewhere leaves no record and no error.
func (c *Controller) phaseAfter(key types.NamespacedName, o kit.Outcome) lbPhase {
	st := c.state.get(key)
	switch {
	case o.Failed():
		return phaseFailing
	case st == nil && o.Err == nil:
		return ""
	case st == nil || len(st.status.Ingress) == 0:
		return phasePending
	default:
		return phaseServing
	}
}
