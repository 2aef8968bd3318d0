package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
)

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}
