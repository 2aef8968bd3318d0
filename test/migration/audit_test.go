package migration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// write is one write request a controller manager made, as the API
// server's audit log recorded it.
type write struct {
	at      time.Time
	process string // "stratus" or "upstream"
	verb    string
	what    string // resource[/subresource] namespace/name
	dryRun  bool
}

func (w write) String() string { return w.process + " " + w.verb + " " + w.what }

// process tells which implementation sent a request, from its user agent:
// Stratus' clients say "stratus-cloud-controller-manager" (or the binary's
// name, "stratus/…", for the provider's), the upstream peer's start with
// its binary's name. Anything else (the test, kwok) is "".
func process(userAgent string) string {
	switch {
	case strings.HasPrefix(userAgent, "upstream-ccm/"):
		return "upstream"
	case strings.HasPrefix(userAgent, "stratus-cloud-controller-manager"), strings.HasPrefix(userAgent, "stratus/"):
		return "stratus"
	}
	return ""
}

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// auditWrites returns every write request, answered, of either controller
// manager that the API server logged between from and to.
func (c *cluster) auditWrites(t *testing.T, from, to time.Time) []write {
	t.Helper()
	f, err := os.Open(c.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []write
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log line: %v", err)
		}
		at := e.StageTimestamp.Time
		p := process(e.UserAgent)
		if e.Stage != auditv1.StageResponseComplete || !writeVerbs[e.Verb] || p == "" || e.ObjectRef == nil || at.Before(from) || at.After(to) {
			continue
		}
		o := e.ObjectRef
		what := o.Resource
		if o.Subresource != "" {
			what += "/" + o.Subresource
		}
		what += " " + strings.TrimPrefix(o.Namespace+"/"+o.Name, "/")
		out = append(out, write{at: at, process: p, verb: e.Verb, what: what, dryRun: strings.Contains(e.RequestURI, "dryRun=")})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// isNodeOrService tells whether a write is to a Node or a Service (any
// subresource).
func (w write) isNodeOrService() bool {
	return strings.HasPrefix(w.what, "nodes") || strings.HasPrefix(w.what, "services")
}

// writeSummary counts writes by process, verb and resource.
func writeSummary(ws []write) string {
	var lines []string
	for _, w := range ws {
		res, _, _ := strings.Cut(w.what, " ")
		l := fmt.Sprintf("%s %s %s", w.process, w.verb, res)
		if w.dryRun {
			l += " (dry run)"
		}
		lines = append(lines, l)
	}
	return summary(lines)
}
