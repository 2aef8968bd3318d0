package release

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Unreleased is the name of the changelog's section of changes not yet
// released.
const Unreleased = "Unreleased"

// sectionRE is a keep-a-changelog release heading: "## [v0.2.0] - 2026-11-29"
// or "## [Unreleased]".
var sectionRE = regexp.MustCompile(`^## \[([^\]]+)\]`)

// linkRE is a link reference definition ("[v0.2.0]: https://..."), which
// keep-a-changelog puts at the end of the file: it belongs to no section.
var linkRE = regexp.MustCompile(`^\[[^\]]+\]:\s`)

// Section returns the section of changelog named name, heading included,
// trimmed; an error if there is none or it says nothing.
func Section(changelog []byte, name string) (string, error) {
	var b strings.Builder
	found, in := false, false
	sc := bufio.NewScanner(bytes.NewReader(changelog))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			m := sectionRE.FindStringSubmatch(line)
			in = len(m) == 2 && m[1] == name
			if in && found {
				return "", fmt.Errorf("CHANGELOG.md has two sections ## [%s]", name)
			}
			found = found || in
		}
		if in && !linkRE.MatchString(line) {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading CHANGELOG.md: %w", err)
	}
	if !found {
		return "", fmt.Errorf("CHANGELOG.md has no section ## [%s]: add one (keep-a-changelog form) before releasing it", name)
	}
	s := strings.TrimSpace(b.String())
	if name != Unreleased && !strings.Contains(s, "\n") {
		return "", fmt.Errorf("CHANGELOG.md's section ## [%s] is empty", name)
	}
	return s, nil
}

// Subsection returns the "### heading" part of a section, without its
// heading line, or "" if the section has none.
func Subsection(section, heading string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "### ") || strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(strings.TrimPrefix(line, "###")) == heading
			continue
		}
		if in {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
