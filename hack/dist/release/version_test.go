package release

import (
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"v0.2.0", "v1.0.0", "v10.20.30", "v0.3.0-rc.1", "v0.3.0-alpha", "v0.3.0-alpha.0.beta-2", "v0.3.0-0"} {
		v, err := ParseVersion(s)
		if err != nil {
			t.Errorf("ParseVersion(%q): %v", s, err)
			continue
		}
		if v.String() != s {
			t.Errorf("ParseVersion(%q).String() = %q", s, v.String())
		}
		if v.ChartVersion() != s[1:] {
			t.Errorf("ParseVersion(%q).ChartVersion() = %q", s, v.ChartVersion())
		}
	}
	for _, s := range []string{"", "0.2.0", "v0.2", "v0.2.0.1", "v01.2.0", "v0.02.0", "v0.2.0-", "v0.2.0-rc..1", "v0.2.0-01",
		"v0.2.0+build.1", "V0.2.0", "v0.2.0 ", "latest", "v0.2.0-rc_1"} {
		_, err := ParseVersion(s)
		if err == nil {
			t.Errorf("ParseVersion(%q) accepted", s)
			continue
		}
		if !strings.Contains(err.Error(), "vMAJOR.MINOR.PATCH") && !strings.Contains(err.Error(), "leading zero") {
			t.Errorf("ParseVersion(%q): %v does not say what a version is", s, err)
		}
	}
}

const changelog = `# Changelog

Intro text.

## [Unreleased]

### Added

- ` + "`pkg/cloud`" + `: something.

### Changed (API)

- ` + "`pkg/ccm`" + `: renamed.

## [v0.2.0] - 2026-11-29

The first release.

### Added

- Everything.

## [v0.1.0-rc.1] - 2026-10-01

## [v0.0.1] - 2026-01-01

- Old.

[Unreleased]: https://example/compare/v0.2.0...HEAD
[v0.2.0]: https://example/releases/tag/v0.2.0
`

func TestSection(t *testing.T) {
	t.Parallel()
	got, err := Section([]byte(changelog), "v0.2.0")
	if err != nil {
		t.Fatal(err)
	}
	want := "## [v0.2.0] - 2026-11-29\n\nThe first release.\n\n### Added\n\n- Everything."
	if got != want {
		t.Errorf("Section(v0.2.0) =\n%s\nwant\n%s", got, want)
	}
	last, err := Section([]byte(changelog), "v0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(last, "https://") {
		t.Errorf("the last section holds the link definitions:\n%s", last)
	}
	if _, err := Section([]byte(changelog), "v0.3.0"); err == nil || !strings.Contains(err.Error(), "no section ## [v0.3.0]") {
		t.Errorf("Section(v0.3.0): %v, want no section", err)
	}
	if _, err := Section([]byte(changelog), "v0.1.0-rc.1"); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("Section(v0.1.0-rc.1): %v, want empty", err)
	}
	if _, err := Section([]byte(changelog+"## [v0.2.0]\n\n- again\n"), "v0.2.0"); err == nil {
		t.Error("two sections of one version accepted")
	}
	unreleased, err := Section([]byte(changelog), Unreleased)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(Subsection(unreleased, "Changed (API)")); got != "- `pkg/ccm`: renamed." {
		t.Errorf("Subsection(Changed (API)) = %q", got)
	}
	if got := Subsection(unreleased, "Removed"); got != "" {
		t.Errorf("Subsection(Removed) = %q, want empty", got)
	}
}

// TestRepositoryChangelog holds CHANGELOG.md to the form make release
// and the API check read: an Unreleased section and a released one.
func TestRepositoryChangelog(t *testing.T) {
	t.Parallel()
	data := readRepoFile(t, "CHANGELOG.md")
	if _, err := Section(data, Unreleased); err != nil {
		t.Error(err)
	}
	if _, err := Section(data, "v0.2.0"); err != nil {
		t.Error(err)
	}
}
