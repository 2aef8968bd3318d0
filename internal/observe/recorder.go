package observe

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// Actions a planned change can have.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionDelete = "delete"
)

// Change is one thing Stratus would have done.
type Change struct {
	// Controller is the controller that wanted it (upstream's name), or
	// "unknown" when the request did not say.
	Controller string
	// Kind is the API resource ("nodes", "services") or the cloud object
	// ("load-balancer", "route").
	Kind string
	// Action is ActionCreate, ActionUpdate or ActionDelete.
	Action string
	// Object names the object: namespace/name, a node, a route.
	Object string
	// Diff says what would change: "path: old → new" lines, or the cloud
	// call's arguments.
	Diff string
}

func (c Change) String() string {
	return fmt.Sprintf("would %s %s %s (%s)", c.Action, kindSingular(c.Kind), c.Object, c.Controller)
}

// kindSingular reads better in a sentence: "nodes/status" → "node/status".
func kindSingular(k string) string {
	res, sub, found := strings.Cut(k, "/")
	res = strings.TrimSuffix(res, "s")
	if found {
		return res + "/" + sub
	}
	return res
}

// MetricPlanned is the counter of planned changes.
const MetricPlanned = "stratus_observe_planned_changes_total"

// Recorder collects planned changes. It is safe for concurrent use.
type Recorder struct {
	planned *prometheus.CounterVec

	mu sync.Mutex
	// byObject keeps the latest change per controller, kind, action and
	// object, with how many times it was planned (a controller retries).
	byObject map[string]*entry
}

type entry struct {
	Change
	times int
}

// NewRecorder returns a Recorder whose metric is registered on reg (nil:
// none).
func NewRecorder(reg prometheus.Registerer) (*Recorder, error) {
	r := &Recorder{
		planned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricPlanned,
			Help: "Changes observe mode would have made, by controller, kind and action (retries of one change count again).",
		}, []string{"controller", "kind", "action"}),
		byObject: map[string]*entry{},
	}
	if reg != nil {
		if err := reg.Register(r.planned); err != nil {
			return nil, fmt.Errorf("observe: register metrics: %w", err)
		}
	}
	return r, nil
}

// Record counts and logs one planned change.
func (r *Recorder) Record(ctx context.Context, c Change) {
	if c.Controller == "" {
		c.Controller = UnknownController
	}
	r.planned.WithLabelValues(c.Controller, c.Kind, c.Action).Inc()
	klog.FromContext(ctx).Info("Observe mode: planned change", "controller", c.Controller, "kind", c.Kind,
		"action", c.Action, "object", c.Object, "diff", c.Diff)
	key := c.Controller + "|" + c.Kind + "|" + c.Action + "|" + c.Object
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.byObject[key]
	if e == nil {
		e = &entry{}
		r.byObject[key] = e
	}
	e.Change = c
	e.times++
}

// Changes returns the distinct planned changes, sorted.
func (r *Recorder) Changes() []Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Change, 0, len(r.byObject))
	for _, e := range r.byObject {
		out = append(out, e.Change)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// ServeHTTP serves the summary as text, so an operator can read the plan
// while observe mode runs.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_ = r.WriteSummary(w)
}

// WriteSummary writes one line per distinct planned change, or a line
// saying there were none.
func (r *Recorder) WriteSummary(w io.Writer) error {
	changes := r.Changes()
	if len(changes) == 0 {
		_, err := fmt.Fprintln(w, "observe mode: 0 planned changes")
		return err
	}
	if _, err := fmt.Fprintf(w, "observe mode: %d planned changes\n", len(changes)); err != nil {
		return err
	}
	for _, c := range changes {
		if _, err := fmt.Fprintf(w, "  %s: %s\n", c, c.Diff); err != nil {
			return err
		}
	}
	return nil
}
