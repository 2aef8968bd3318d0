// Package report turns benchmark results into the generated section of
// docs/benchmarks.md (tables, ratios, targets), PNG charts, and keeps the
// hand-written rest of that file intact.
package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The generated section lives between these markers; everything outside
// them is written by hand and preserved.
const (
	BeginMarker = "<!-- BEGIN make bench -->"
	EndMarker   = "<!-- END make bench -->"
)

// NewDocument is the file created when docs/benchmarks.md does not exist:
// the markers plus a hand-maintained place for the reasons behind missed
// targets.
func NewDocument() string {
	return `# Benchmarks: Stratus against the upstream cloud-controller-manager

` + "`make bench`" + ` regenerates the section between the markers below; edit
everything else by hand.

` + BeginMarker + `
` + EndMarker + `

## Why a target is missed

For each target the generated section marks as missed, say why here.
`
}

// ReplaceSection puts section between the markers of doc, keeping
// everything outside them byte for byte. A document without markers gets
// them appended; one with a marker missing or out of order is an error,
// since guessing could destroy hand-written text.
func ReplaceSection(doc, section string) (string, error) {
	b := strings.Index(doc, BeginMarker)
	e := strings.Index(doc, EndMarker)
	switch {
	case b < 0 && e < 0:
		sep := "\n"
		if doc == "" || strings.HasSuffix(doc, "\n\n") {
			sep = ""
		} else if !strings.HasSuffix(doc, "\n") {
			sep = "\n\n"
		}
		return doc + sep + BeginMarker + "\n" + strings.TrimRight(section, "\n") + "\n" + EndMarker + "\n", nil
	case b < 0 || e < 0 || e < b:
		return "", errors.New("report: the document has a broken pair of make bench markers; fix them by hand")
	case strings.Count(doc, BeginMarker) > 1 || strings.Count(doc, EndMarker) > 1:
		return "", errors.New("report: the document has more than one pair of make bench markers")
	}
	head := doc[:b+len(BeginMarker)]
	tail := doc[e:]
	return head + "\n" + strings.TrimRight(section, "\n") + "\n" + tail, nil
}

// UpdateFile rewrites the generated section of the file at path, creating
// the file from NewDocument when it does not exist.
func UpdateFile(path, section string) error {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		data = []byte(NewDocument())
	case err != nil:
		return fmt.Errorf("report: read %s: %w", path, err)
	}
	out, err := ReplaceSection(string(data), section)
	if err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { //nolint:gosec // documentation is world-readable
		return fmt.Errorf("report: %w", err)
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil { //nolint:gosec // documentation is world-readable
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	return nil
}
