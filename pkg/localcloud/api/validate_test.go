package api

import (
	"errors"
	"strings"
	"testing"
)

func TestHealthCheckPath(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "/healthz", "/livez?verbose=1"} {
		if err := (HealthCheck{Path: ok}).validate(); err != nil {
			t.Errorf("path %q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"healthz", "/a b", "/\x00", "/é", "/" + strings.Repeat("x", 256)} {
		err := (HealthCheck{Path: bad}).validate()
		var apiErr *Error
		if !errors.As(err, &apiErr) || !strings.Contains(err.Error(), "healthCheck.path") {
			t.Errorf("path %q: err = %v, want an invalid healthCheck.path error", bad, err)
		}
	}
}
