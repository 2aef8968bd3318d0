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

// markers returns the markers of the section called name: the default
// scale's section ("") or one of its own per scale ("xlarge"), so that a
// run at one scale keeps the others' figures.
func markers(name string) (begin, end string) {
	if name == "" {
		return BeginMarker, EndMarker
	}
	return "<!-- BEGIN make bench " + name + " -->", "<!-- END make bench " + name + " -->"
}

// ReplaceSection puts section between the markers of doc, keeping
// everything outside them byte for byte. A document without markers gets
// them appended; one with a marker missing or out of order is an error,
// since guessing could destroy hand-written text.
func ReplaceSection(doc, section string) (string, error) {
	return ReplaceNamedSection(doc, "", section)
}

// ReplaceNamedSection is ReplaceSection for the section called name.
func ReplaceNamedSection(doc, name, section string) (string, error) {
	begin, end := markers(name)
	b := strings.Index(doc, begin)
	e := strings.Index(doc, end)
	switch {
	case b < 0 && e < 0:
		sep := "\n"
		if doc == "" || strings.HasSuffix(doc, "\n\n") {
			sep = ""
		} else if !strings.HasSuffix(doc, "\n") {
			sep = "\n\n"
		}
		return doc + sep + begin + "\n" + strings.TrimRight(section, "\n") + "\n" + end + "\n", nil
	case b < 0 || e < 0 || e < b:
		return "", fmt.Errorf("report: the document has a broken pair of %q markers; fix them by hand", begin)
	case strings.Count(doc, begin) > 1 || strings.Count(doc, end) > 1:
		return "", fmt.Errorf("report: the document has more than one pair of %q markers", begin)
	}
	head := doc[:b+len(begin)]
	tail := doc[e:]
	return head + "\n" + strings.TrimRight(section, "\n") + "\n" + tail, nil
}

// UpdateFile rewrites the generated section of the file at path, creating
// the file from NewDocument when it does not exist.
func UpdateFile(path, section string) error { return UpdateFileSection(path, "", section) }

// UpdateFileSection is UpdateFile for the section called name.
func UpdateFileSection(path, name, section string) error {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		data = []byte(NewDocument())
	case err != nil:
		return fmt.Errorf("report: read %s: %w", path, err)
	}
	out, err := ReplaceNamedSection(string(data), name, section)
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
