package promtool

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// What unittest.go takes from the rest of promtool's main package.

// Exit codes of RulesUnitTestResult, promtool's.
const (
	successExitCode = 0
	failureExitCode = 1
)

// parseTime reads a test's start_timestamp as promtool does (its
// query.go): Unix seconds or RFC 3339.
func parseTime(s string) (time.Time, error) {
	if t, err := strconv.ParseFloat(s, 64); err == nil {
		s, ns := math.Modf(t)
		return time.Unix(int64(s), int64(ns*float64(time.Second))).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("cannot parse %q to a valid timestamp", s)
}
