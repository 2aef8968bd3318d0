package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stratus-ccm/stratus/internal/explain"
)

// printExplanation writes ex for a person. A standby's answer says who
// leads and is an error (exit code 1): the leader has the answer.
func printExplanation(w io.Writer, ex *explain.Explanation, now time.Time) error {
	p := &printer{w: w}
	obj := ex.Object.String()
	if !ex.Leading {
		leader := ex.Leader
		if leader == "" {
			leader = "unknown (no holder seen on the Lease)"
		}
		p.line(0, "%s: replica %s does not lead; the leader is %s. Ask the leader's secure port.", obj, ex.Replica, leader)
		return fmt.Errorf("%w: the leader is %s", errNotLeader, leader)
	}
	by := ""
	if ex.Replica != "" {
		by = " (answered by the leader, " + ex.Replica + ")"
	}
	p.line(0, "%s%s", obj, by)
	if !ex.Known {
		p.line(1, "No controller of the leader has acted on it since it started leading: it is not of a kind or class Stratus handles, it needs nothing, or the name is wrong.")
	}
	for _, s := range ex.Syncs {
		printSync(p, s, now)
	}
	if w := ex.Waiting; w != nil {
		p.line(1, "waiting now: %s's %s is held back by the client-side pacer until %s (%s more): %s",
			w.Controller, w.Operation, w.Until.UTC().Format(time.RFC3339), roundDuration(max(0, w.Until.Sub(now))), w.Why)
	}
	if len(ex.CloudOps) > 0 {
		p.line(1, "cloud operations (the last %d of %d):", len(ex.CloudOps), ex.CloudOpsTotal)
		for _, op := range ex.CloudOps {
			msg := ""
			if op.Error != "" {
				msg = ": " + op.Error
			}
			p.line(2, "%s %s %s in %s%s", op.Time.UTC().Format(time.RFC3339), op.Operation, op.Result, op.Latency, msg)
		}
	}
	for _, d := range ex.Details {
		p.line(1, "%s says:", d.Controller)
		for _, l := range d.Lines {
			p.line(2, "%s", l)
		}
	}
	return p.err
}

func printSync(p *printer, s explain.Sync, now time.Time) {
	p.line(1, "%s: last sync %s (%s ago): %s", s.Controller, s.Time.UTC().Format(time.RFC3339), roundDuration(now.Sub(s.Time)), s.Result)
	if s.Attempts > 0 {
		p.line(2, "failed attempts in a row: %d", s.Attempts)
	}
	if s.LastError != "" {
		when := ""
		if s.LastErrorTime != nil {
			when = " (" + s.LastErrorTime.UTC().Format(time.RFC3339) + ")"
		}
		p.line(2, "last error%s: %s", when, s.LastError)
	}
	if s.NextRetry != nil {
		p.line(2, "next retry: %s (in %s), %s", s.NextRetry.UTC().Format(time.RFC3339), roundDuration(max(0, s.NextRetry.Sub(now))), s.RetryWhy)
	} else if s.Pacing != "" {
		// With a retry, its why says it already.
		p.line(2, "%s", s.Pacing)
	}
}

// roundDuration keeps a sub-second delay readable (a 250ms backoff is not
// "0s") and drops the noise of longer ones.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// printer writes indented lines and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(indent int, format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, "%s%s\n", strings.Repeat("  ", indent), fmt.Sprintf(format, args...))
}
