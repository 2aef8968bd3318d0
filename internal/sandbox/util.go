package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"
)

// renewEvery calls renew every period until ctx ends. A failure is logged
// and retried at the next period: the credential it renews is still valid
// for the other half of its life.
func renewEvery(ctx context.Context, period time.Duration, what string, renew func(context.Context) error) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := renew(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "Renewing "+what)
			}
		}
	}
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}
