package teardown

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Output formats.
const (
	OutputText = "text"
	OutputJSON = "json"
)

// Write prints the summary as a table with a closing line (text) or as
// one JSON document (json), for cluster-deletion tooling.
func Write(w io.Writer, s Summary, format string) error {
	switch strings.ToLower(format) {
	case "", OutputText:
		return writeText(w, s)
	case OutputJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(s); err != nil {
			return fmt.Errorf("teardown: write JSON: %w", err)
		}
		return nil
	default:
		return fmt.Errorf("teardown: --output=%q: want %s or %s", format, OutputText, OutputJSON)
	}
}

func writeText(w io.Writer, s Summary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(s.Objects) > 0 {
		_, _ = fmt.Fprintln(tw, "KIND\tNAME\tOWNER\tSTATE\tREASON")
	}
	for _, o := range s.Objects {
		owner := o.Service
		if o.Kind == KindRoute {
			owner = o.Destination + " -> " + o.Target
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", o.Kind, o.Name, owner, o.State, o.Reason)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("teardown: write: %w", err)
	}
	var line string
	switch {
	case len(s.Objects) == 0:
		line = fmt.Sprintf("cluster %q owns no load balancer or route", s.Cluster)
	case s.DryRun:
		line = fmt.Sprintf("dry run: would delete %d object(s) of cluster %q, refuses %d; run again with --yes to delete",
			s.Counts[StatePlanned], s.Cluster, s.Counts[StateRefused])
	default:
		line = fmt.Sprintf("deleted %d object(s) of cluster %q; refused %d, failed %d, still listed %d",
			s.Counts[StateDeleted], s.Cluster, s.Counts[StateRefused], s.Counts[StateFailed], s.Counts[StatePending])
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// NotCleanError says that objects remain that the teardown did not delete
// (refused, failed, or still listed when the wait ended). Its exit code, 2,
// tells cluster-deletion tooling to look before it goes on.
type NotCleanError struct{ Summary Summary }

func (e *NotCleanError) Error() string {
	return fmt.Sprintf("teardown: cluster %q keeps %d object(s): refused %d, failed %d, still listed %d",
		e.Summary.Cluster, e.Summary.Counts[StateRefused]+e.Summary.Counts[StateFailed]+e.Summary.Counts[StatePending],
		e.Summary.Counts[StateRefused], e.Summary.Counts[StateFailed], e.Summary.Counts[StatePending])
}

// ExitCode is the process exit code for this outcome.
func (e *NotCleanError) ExitCode() int { return ExitNotClean }

// Exit codes of `stratus teardown`.
const (
	// ExitClean: nothing of the cluster's is left (or, in a dry run,
	// everything found can be deleted).
	ExitClean = 0
	// ExitError: the teardown could not run (bad flags, the provider, a
	// list that failed).
	ExitError = 1
	// ExitNotClean: objects remain that it refused, failed to delete, or
	// saw still listed when the wait ended.
	ExitNotClean = 2
)
