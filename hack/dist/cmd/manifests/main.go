// Command manifests renders charts/stratus into the plain manifests in
// deploy/ (make manifests).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/stratus-ccm/stratus/hack/dist/chart"
)

func main() {
	chartDir := flag.String("chart", "charts/stratus", "the chart's directory")
	deployDir := flag.String("out", "deploy", "where the plain manifests go")
	flag.Parse()
	if err := chart.WriteManifests(*chartDir, *deployDir); err != nil {
		fmt.Fprintln(os.Stderr, "manifests:", err)
		os.Exit(1)
	}
}
