// Package explain answers "why" for one object: what the controllers last
// did with a Service or a Node, what failed, when they try again and why,
// the cloud calls they made for it, and what each controller knows of it
// (which nodes a load balancer targets, which predicate keeps a node out).
//
// The controllers feed a Store as they work; the cloud wrapper reports each
// call through a hook, and the object a call is for comes from its context
// (WithObject). Memory is bounded: a small ring of cloud calls per object,
// at most MaxObjects objects, and a deleted object's entry is dropped. The
// daemon serves the Store at /debug/explain (Handler), behind the same
// authentication and authorization as /metrics; `stratus explain` reads it.
package explain

import (
	"context"
	"sync"
	"time"
	"unicode/utf8"
)

// Kinds of objects explained.
const (
	KindService = "service"
	KindNode    = "node"
)

// Bounds of the Store.
const (
	// MaxObjects is the most objects a Store remembers; beyond it, the one
	// updated longest ago is dropped.
	MaxObjects = 20000
	// OpsPerObject is the length of each object's ring of cloud calls.
	OpsPerObject = 8
	// maxErrorLen bounds a stored error message (a provider error can
	// quote a Service's 10 KB annotation).
	maxErrorLen = 1000
)

// Ref names an object: a kind, and for a Service its namespace.
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// Outcome is how one sync ended, as the controller tells it.
type Outcome struct {
	// Err is what the sync returned; nil is success.
	Err error
	// Retry is true when Err is the cloud's "come back later" (a
	// RetryError), not a failure.
	Retry bool
	// RetryIn is when the controller will sync the object again; zero for
	// none scheduled.
	RetryIn time.Duration
	// RetryWhy says why it retries: the provider's RetryError, the
	// queue's backoff after failures, the cloud's throttling.
	RetryWhy string
}

// Sync is one controller's last sync of an object.
type Sync struct {
	Controller string    `json:"controller"`
	Time       time.Time `json:"time"`
	Result     string    `json:"result"`
	// Attempts counts the failed syncs in a row (0 after a success).
	Attempts      int        `json:"attempts"`
	LastError     string     `json:"lastError,omitempty"`
	LastErrorTime *time.Time `json:"lastErrorTime,omitempty"`
	NextRetry     *time.Time `json:"nextRetry,omitempty"`
	RetryWhy      string     `json:"retryWhy,omitempty"`
	// Pacing says how long this sync's cloud calls waited in the client-side
	// pacer, and why; empty when none waited.
	Pacing string `json:"pacing,omitempty"`
}

// Wait is a cloud call held back by the client-side pacer.
type Wait struct {
	Controller string    `json:"controller,omitempty"`
	Operation  string    `json:"operation"`
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
	Why        string    `json:"why"`
}

// CloudOp is one cloud call made for an object.
type CloudOp struct {
	Time       time.Time `json:"time"`
	Controller string    `json:"controller,omitempty"`
	Operation  string    `json:"operation"`
	Result     string    `json:"result"`
	Latency    string    `json:"latency"`
	Error      string    `json:"error,omitempty"`
}

// Results of a Sync.
const (
	ResultSuccess = "success"
	ResultRetry   = "retry"
	ResultError   = "error"
)

type entry struct {
	// syncs holds one Sync per controller: a handful at most, so a slice
	// searched in order weighs less than a map.
	syncs []*Sync
	// paced sums, per controller, the pacer's waits since its last sync;
	// waiting is the last wait, shown while it lasts.
	paced   map[string]*pacedSum
	waiting *Wait
	// ops is a ring of the last OpsPerObject cloud calls, grown as calls
	// come: most Nodes never have a call of their own (the node
	// controllers list instances in batches), and a full ring is some
	// 850 bytes, half of what an entry weighs.
	ops     []CloudOp
	nOps    int // calls recorded in all
	touched time.Time
}

// Describer tells what one controller knows of an object right now, as
// lines for a person to read; nil when it knows nothing.
type Describer func(ctx context.Context, ref Ref) []string

// Store holds what the controllers did, per object. A nil *Store records
// nothing and explains nothing, so a controller built without one (a test,
// a binary that serves no explain endpoint) needs no check.
type Store struct {
	mu         sync.Mutex
	entries    map[Ref]*entry
	describers map[string][]namedDescriber
	now        func() time.Time
	max        int
}

type namedDescriber struct {
	controller string
	fn         Describer
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{entries: map[Ref]*entry{}, describers: map[string][]namedDescriber{}, now: time.Now, max: MaxObjects}
}

// Describe registers what controller can tell about objects of kind.
func (s *Store) Describe(kind, controller string, fn Describer) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.describers[kind] = append(s.describers[kind], namedDescriber{controller: controller, fn: fn})
}

// Synced records how controller's sync of ref ended.
func (s *Store) Synced(ref Ref, controller string, o Outcome) {
	if s == nil {
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entryLocked(ref, now)
	var st *Sync
	for _, x := range e.syncs {
		if x.Controller == controller {
			st = x
			break
		}
	}
	if st == nil {
		st = &Sync{Controller: controller}
		e.syncs = append(e.syncs, st)
	}
	st.Time, st.NextRetry, st.RetryWhy, st.Pacing = now, nil, "", e.takePaced(controller)
	if o.RetryIn > 0 {
		at := now.Add(o.RetryIn)
		st.NextRetry, st.RetryWhy = &at, o.RetryWhy
		if st.Pacing != "" {
			// The next attempt's calls are likely to wait as well.
			st.RetryWhy += "; " + st.Pacing
		}
	}
	switch {
	case o.Err == nil:
		st.Result, st.Attempts = ResultSuccess, 0
	case o.Retry:
		st.Result = ResultRetry
		st.LastError, st.LastErrorTime = bound(o.Err.Error()), &now
	default:
		st.Result = ResultError
		st.Attempts++
		st.LastError, st.LastErrorTime = bound(o.Err.Error()), &now
	}
}

// Forget drops a deleted object's entry.
func (s *Store) Forget(ref Ref) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, ref)
}

// CloudCall records a cloud call for the object ctx names (WithObject); a
// call for no object (a periodic list) is not recorded. It is the cloud
// wrapper's hook.
func (s *Store) CloudCall(ctx context.Context, op, result string, latency time.Duration, err error) {
	ref, ok := ObjectFrom(ctx)
	if s == nil || !ok {
		return
	}
	c := CloudOp{Time: s.now(), Controller: controllerFrom(ctx), Operation: op, Result: result, Latency: latency.Round(time.Microsecond).String()}
	if err != nil {
		c.Error = bound(err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entryLocked(ref, c.Time)
	if len(e.ops) < OpsPerObject {
		e.ops = append(e.ops, c)
	} else {
		e.ops[e.nOps%OpsPerObject] = c
	}
	e.nOps++
}

func (s *Store) entryLocked(ref Ref, now time.Time) *entry {
	e := s.entries[ref]
	if e == nil {
		if len(s.entries) >= s.max {
			s.evictLocked()
		}
		// paced is made on the first wait: few objects ever wait.
		e = &entry{}
		s.entries[ref] = e
	}
	e.touched = now
	return e
}

// evictLocked drops the entry updated longest ago. It scans every entry,
// which happens only when the Store is full.
func (s *Store) evictLocked() {
	var oldest Ref
	var at time.Time
	first := true
	for r, e := range s.entries {
		if first || e.touched.Before(at) {
			oldest, at, first = r, e.touched, false
		}
	}
	delete(s.entries, oldest)
}

// Len reports how many objects the Store remembers.
func (s *Store) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

func bound(msg string) string {
	if len(msg) <= maxErrorLen {
		return msg
	}
	n := maxErrorLen
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return msg[:n] + "…"
}
