// Command controllertable writes the daemon's controller table into the
// chart (make manifests), so the chart's controllers, their
// ServiceAccounts and their RBAC come from the table alone.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stratus-ccm/stratus/internal/app"
)

func main() {
	chartDir := flag.String("chart", "charts/stratus", "the chart's directory")
	flag.Parse()
	if err := write(*chartDir); err != nil {
		fmt.Fprintln(os.Stderr, "controllertable:", err)
		os.Exit(1)
	}
}

func write(chartDir string) error {
	b, err := app.ChartControllers()
	if err != nil {
		return fmt.Errorf("chart controllers: %w", err)
	}
	path := filepath.Join(chartDir, app.ChartControllersFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { //nolint:gosec // checked-in sources are world-readable
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil { //nolint:gosec // checked-in sources are world-readable
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
