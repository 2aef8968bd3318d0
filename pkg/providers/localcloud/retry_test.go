package localcloud

import (
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		readyAt time.Time
		want    time.Duration
	}{
		{"no promised time", time.Time{}, provisioningRetry},
		{"ready in 2s", now.Add(2 * time.Second), 2*time.Second + readyMargin},
		{"ready in 10ms", now.Add(10 * time.Millisecond), lateRetry},
		{"late", now.Add(-time.Second), lateRetry},
		{"clock far off", now.Add(time.Hour), maxReadyWait},
	} {
		if got := retryDelay(&api.LoadBalancer{ReadyAt: tc.readyAt}, now); got != tc.want {
			t.Errorf("%s: retryDelay = %v, want %v", tc.name, got, tc.want)
		}
	}
}
