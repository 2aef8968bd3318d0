package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// Path is where the daemon serves explanations, a non-resource URL that
// RBAC grants like /metrics: GET /debug/explain?kind=service&name=NS/NAME
// or ?kind=node&name=NAME.
const Path = "/debug/explain"

// Explanation is what the endpoint answers for one object.
type Explanation struct {
	Object Ref `json:"object"`
	// Replica is the identity of the replica that answered; Leading says
	// whether it leads, Leader who does as it last saw the Lease. Only the
	// leader's controllers act, so only its answer has their record.
	Replica string `json:"replica,omitempty"`
	Leading bool   `json:"leading"`
	Leader  string `json:"leader,omitempty"`
	// Known is false when no controller of this replica has recorded
	// anything about the object since it started leading.
	Known bool   `json:"known"`
	Syncs []Sync `json:"syncs,omitempty"`
	// Waiting is a cloud call for the object the client-side pacer holds
	// back right now.
	Waiting *Wait `json:"waiting,omitempty"`
	// CloudOps are the last cloud calls made for the object, oldest first;
	// CloudOpsTotal counts every call recorded, the ring keeps the last
	// OpsPerObject.
	CloudOps      []CloudOp `json:"cloudOperations,omitempty"`
	CloudOpsTotal int       `json:"cloudOperationsTotal"`
	Details       []Detail  `json:"details,omitempty"`
}

// Detail is what one controller knows of the object now.
type Detail struct {
	Controller string   `json:"controller"`
	Lines      []string `json:"lines"`
}

// Explain returns what the Store holds about ref, with the describers'
// lines.
func (s *Store) Explain(ctx context.Context, ref Ref) Explanation {
	out := Explanation{Object: ref}
	if s == nil {
		return out
	}
	s.mu.Lock()
	if e := s.entries[ref]; e != nil {
		out.Known = true
		for _, st := range e.syncs {
			out.Syncs = append(out.Syncs, *st)
		}
		n := min(e.nOps, OpsPerObject)
		for i := e.nOps - n; i < e.nOps; i++ {
			out.CloudOps = append(out.CloudOps, e.ops[i%OpsPerObject])
		}
		out.CloudOpsTotal = e.nOps
		out.Waiting = e.waitingAt(s.now())
	}
	describers := append([]namedDescriber(nil), s.describers[ref.Kind]...)
	s.mu.Unlock()
	sort.Slice(out.Syncs, func(i, j int) bool { return out.Syncs[i].Controller < out.Syncs[j].Controller })
	// Describers read the controllers' own state, under their own locks:
	// outside the Store's.
	for _, d := range describers {
		if lines := d.fn(ctx, ref); len(lines) > 0 {
			out.Known = true
			out.Details = append(out.Details, Detail{Controller: d.controller, Lines: lines})
		}
	}
	return out
}

// Leadership tells the handler whether this replica leads, and who does.
type Leadership func() (replica string, leading bool, leader string)

// Handler serves the Store at Path. A standby answers too, with who leads:
// its own controllers do nothing, so it has nothing else to say.
func Handler(s *Store, lead Leadership) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"message": "only GET is served"})
			return
		}
		ref, err := ParseRef(r.URL.Query().Get("kind"), r.URL.Query().Get("name"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
			return
		}
		replica, leading, leader := lead()
		out := Explanation{Object: ref}
		if leading {
			out = s.Explain(r.Context(), ref)
		}
		out.Replica, out.Leading, out.Leader = replica, leading, leader
		writeJSON(w, http.StatusOK, out)
	})
}

// ParseRef checks a kind and a name as the endpoint and the command take
// them: "service" with NAMESPACE/NAME, "node" with NAME.
func ParseRef(kind, name string) (Ref, error) {
	switch kind {
	case KindService:
		ns, n, ok := strings.Cut(name, "/")
		if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
			return Ref{}, fmt.Errorf("name %q: a Service is named NAMESPACE/NAME", name)
		}
		return Ref{Kind: kind, Namespace: ns, Name: n}, nil
	case KindNode:
		if name == "" || strings.Contains(name, "/") {
			return Ref{}, fmt.Errorf("name %q: a Node is named NAME, without a namespace", name)
		}
		return Ref{Kind: kind, Name: name}, nil
	default:
		return Ref{}, fmt.Errorf("kind %q: want %q or %q", kind, KindService, KindNode)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
