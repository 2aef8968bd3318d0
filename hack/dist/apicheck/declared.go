package apicheck

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/stratus-ccm/stratus/hack/dist/release"
)

// BreakingHeading is the subsection of the changelog's Unreleased section
// that declares incompatible changes to the Go API.
const BreakingHeading = "Changed (API)"

// Mentions says whether text names the package path as a whole: `pkg/cloud`
// and pkg/cloud.EndpointTargeter name pkg/cloud; pkg/cloud/fake does not.
func Mentions(text, path string) bool {
	re := regexp.MustCompile(`(?:^|[^\w/.-])` + regexp.QuoteMeta(path) + `(?:$|[^\w/-])`)
	return re.MatchString(text)
}

// Undeclared returns one error per change the Unreleased section does not
// declare: an incompatible change must name its package under
// "### Changed (API)", any other change must name it anywhere in the
// section.
func Undeclared(changes []Change, unreleased string) []error {
	breaking := release.Subsection(unreleased, BreakingHeading)
	var errs []error
	for _, c := range changes {
		switch {
		case c.Incompatible() && !Mentions(breaking, c.Package):
			errs = append(errs, fmt.Errorf("%s: incompatible API change not declared under CHANGELOG.md's [Unreleased] ### %s:\n%s",
				c.Package, BreakingHeading, describe(c)))
		case !c.Incompatible() && !Mentions(unreleased, c.Package):
			errs = append(errs, fmt.Errorf("%s: compatible API change not mentioned in CHANGELOG.md's [Unreleased] section (e.g. under ### Added):\n%s",
				c.Package, describe(c)))
		}
	}
	return errs
}

func describe(c Change) string {
	var b strings.Builder
	for _, ch := range c.Changes {
		kind := "compatible"
		if !ch.Compatible {
			kind = "INCOMPATIBLE"
		}
		fmt.Fprintf(&b, "  - %s: %s\n", kind, ch.Message)
	}
	return b.String()
}
