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
	writeSigns(w, s)
	_, err := fmt.Fprintln(w, closingLine(s))
	return err
}

// signsShown bounds the signs the text lists: a live cluster's recent
// changes may be every one of its objects, and the first few name the
// controller manager as well as all would (-o json lists all).
const signsShown = 10

// writeSigns lists the signs of life, and what could not be looked at.
func writeSigns(w io.Writer, s Summary) {
	if len(s.SignsOfLife) > 0 {
		_, _ = fmt.Fprintf(w, "signs that cluster %q is alive:\n", s.Cluster)
	}
	for i, sign := range s.SignsOfLife {
		if i == signsShown {
			_, _ = fmt.Fprintf(w, "  ... and %d more (-o json lists them all)\n", len(s.SignsOfLife)-signsShown)
			break
		}
		_, _ = fmt.Fprintf(w, "  %s\n", sign.Message)
	}
	for _, u := range s.Unchecked {
		_, _ = fmt.Fprintf(w, "not checked: %s\n", u)
	}
}

func closingLine(s Summary) string {
	var line string
	switch {
	case s.RefusedAlive && s.DryRun:
		return fmt.Sprintf("dry run: found %d object(s) of cluster %q, but --yes would be refused: the cluster shows %d sign(s) of life (above); "+
			"stop its controller manager first, or add --force to delete anyway", len(s.Objects), s.Cluster, len(s.SignsOfLife))
	case s.RefusedAlive:
		return fmt.Sprintf("refused: cluster %q shows %d sign(s) of life (above); deleted nothing of its %d object(s). "+
			"Stop its controller manager first, or add --force to delete anyway", s.Cluster, len(s.SignsOfLife), len(s.Objects))
	case len(s.Objects) == 0:
		line = fmt.Sprintf("cluster %q owns no load balancer or route", s.Cluster)
	case s.DryRun:
		line = fmt.Sprintf("dry run: would delete %d object(s) of cluster %q, refuses %d; run again with --yes to delete",
			s.Counts[StatePlanned], s.Cluster, s.Counts[StateRefused])
	default:
		line = fmt.Sprintf("deleted %d object(s) of cluster %q; refused %d, failed %d, still listed %d",
			s.Counts[StateDeleted], s.Cluster, s.Counts[StateRefused], s.Counts[StateFailed], s.Counts[StatePending])
	}
	if s.Forced {
		line += fmt.Sprintf(" (--force: despite %d sign(s) of life)", len(s.SignsOfLife))
	}
	return line
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
	// ExitAlive: the cluster shows signs of life and --force was not
	// given: nothing was deleted (in a dry run, --yes would delete
	// nothing).
	ExitAlive = 3
)
