// Command report turns the JUnit report of an e2e.test run into the
// Markdown summary `make conformance` prints: every spec the focus
// selected, passed, failed (with the first line of its failure) or
// skipped (by the skip list, or by the spec itself, with its reason).
// Specs the focus did not select are counted, not listed.
package main

import (
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

type testCase struct {
	Name    string  `xml:"name,attr"`
	Status  string  `xml:"status,attr"`
	Time    float64 `xml:"time,attr"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Body    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
	} `xml:"error"`
}

type suites struct {
	Suites []struct {
		Cases []testCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type row struct {
	name, result, why string
	seconds           float64
}

func main() {
	junit := flag.String("junit", "", "e2e.test's junit_01.xml")
	focus := flag.String("focus", "", "the run's --ginkgo.focus")
	skip := flag.String("skip", "", "the run's --ginkgo.skip")
	logPath := flag.String("log", "", "the run's log, named in the report")
	flag.Parse()
	if err := run(*junit, *focus, *skip, *logPath, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(junit, focus, skip, logPath string, out io.Writer) error {
	if junit == "" || focus == "" {
		return errors.New("-junit and -focus are required")
	}
	f, err := regexp.Compile(focus)
	if err != nil {
		return fmt.Errorf("-focus: %w", err)
	}
	var s *regexp.Regexp
	if skip != "" {
		if s, err = regexp.Compile(skip); err != nil {
			return fmt.Errorf("-skip: %w", err)
		}
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		return fmt.Errorf("read the junit report: %w", err)
	}
	var doc suites
	if err := xml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("parse %s: %w", junit, err)
	}
	rows, unselected := classify(doc, f, s)
	write(out, rows, unselected, focus, skip, logPath)
	return nil
}

// classify sorts the selected specs into results; the suite's own
// before/after nodes ("[SynchronizedBeforeSuite]") count as specs, since
// their failure fails the run.
func classify(doc suites, focus, skip *regexp.Regexp) ([]row, int) {
	var rows []row
	unselected := 0
	for _, su := range doc.Suites {
		for _, c := range su.Cases {
			name := strings.TrimSpace(strings.TrimPrefix(c.Name, "[It]"))
			suiteNode := strings.HasPrefix(c.Name, "[Synchronized") || strings.HasPrefix(c.Name, "[BeforeSuite") || strings.HasPrefix(c.Name, "[AfterSuite")
			if !suiteNode && !focus.MatchString(name) {
				unselected++
				continue
			}
			r := row{name: name, seconds: c.Time}
			switch {
			case c.Failure != nil || c.Error != nil || c.Status == "failed" || c.Status == "timedout" || c.Status == "panicked":
				r.result = "failed"
				if c.Failure != nil {
					// Ginkgo leaves the attribute empty and writes the
					// message as the element's text.
					r.why = firstLine(strings.TrimPrefix(strings.TrimSpace(c.Failure.Message+"\n"+c.Failure.Body), "[FAILED] "))
				} else if c.Error != nil {
					r.why = firstLine(c.Error.Message)
				}
			case c.Skipped != nil || c.Status == "skipped" || c.Status == "pending":
				r.result = "skipped"
				if skip != nil && skip.MatchString(name) {
					r.why = "skip list (CONFORMANCE_SKIP)"
				} else if c.Skipped != nil {
					r.why = firstLine(c.Skipped.Message)
				}
			default:
				r.result = "passed"
			}
			if suiteNode && r.result != "failed" {
				continue
			}
			rows = append(rows, r)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].result != rows[j].result {
			return rows[i].result < rows[j].result
		}
		return rows[i].name < rows[j].name
	})
	return rows, unselected
}

func write(out io.Writer, rows []row, unselected int, focus, skip, logPath string) {
	count := map[string]int{}
	for _, r := range rows {
		count[r.result]++
	}
	fmt.Fprintf(out, "# Kubernetes e2e LoadBalancer specs against Stratus and localcloud\n\n")
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped of %d selected (focus `%s`, skip `%s`); %d specs not selected.\n\n",
		count["passed"], count["failed"], count["skipped"], len(rows), focus, skip, unselected)
	fmt.Fprintf(out, "| result | spec | seconds | why |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(out, "| %s | %s | %.0f | %s |\n", r.result, escape(r.name), r.seconds, escape(r.why))
	}
	if logPath != "" {
		fmt.Fprintf(out, "\nFull log: `%s`.\n", logPath)
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
