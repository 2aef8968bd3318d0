package release

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// versionRE is vMAJOR.MINOR.PATCH[-PRERELEASE] as semantic versioning 2.0
// spells it (no leading zeros in numbers), without build metadata: a "+..."
// suffix would name a second release of the same version, which neither a
// chart repository nor an image tag can tell apart.
var versionRE = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$`)

// numericRE is a pre-release identifier made of digits only.
var numericRE = regexp.MustCompile(`^\d+$`)

// Version is a release version, vMAJOR.MINOR.PATCH[-PRERELEASE].
type Version struct {
	Major, Minor, Patch string
	Prerelease          string
}

// ParseVersion checks s is a release version and splits it.
func ParseVersion(s string) (Version, error) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("version %q is not vMAJOR.MINOR.PATCH[-PRERELEASE] (e.g. v0.2.0, v0.3.0-rc.1)", s)
	}
	for _, id := range strings.Split(m[4], ".") {
		if numericRE.MatchString(id) && len(id) > 1 && id[0] == '0' {
			return Version{}, fmt.Errorf("version %q: the pre-release identifier %q has a leading zero", s, id)
		}
	}
	return Version{Major: m[1], Minor: m[2], Patch: m[3], Prerelease: m[4]}, nil
}

// String is the version with its leading v: the image tag, the chart's
// appVersion and the changelog's heading.
func (v Version) String() string {
	s := "v" + v.Major + "." + v.Minor + "." + v.Patch
	if v.Prerelease != "" {
		s += "-" + v.Prerelease
	}
	return s
}

// ChartVersion is the version without the v, as Helm's chart versions are
// written.
func (v Version) ChartVersion() string { return strings.TrimPrefix(v.String(), "v") }

// Less orders release versions by MAJOR.MINOR.PATCH; the pre-release part
// is not compared (only releases are recorded).
func (v Version) Less(w Version) bool {
	a, b := v.numbers(), w.numbers()
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func (v Version) numbers() [3]int {
	var n [3]int
	for i, s := range []string{v.Major, v.Minor, v.Patch} {
		n[i], _ = strconv.Atoi(s) // ParseVersion checked they are numbers
	}
	return n
}
