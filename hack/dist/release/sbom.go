package release

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// SBOMOptions say how to describe one platform's binary.
type SBOMOptions struct {
	// Tool is the cyclonedx-gomod binary (make builds it into bin/ from
	// hack/release, which pins its version).
	Tool string
	// SourceDir is the exported tree, a git repository whose HEAD is
	// tagged with the release (the tool reads the main module's version
	// from the tag).
	SourceDir string
	// Main is the main package's directory relative to SourceDir.
	Main     string
	Platform *v1.Platform
	// Out is the JSON file to write.
	Out string
}

// WriteSBOM writes a CycloneDX SBOM of the modules the binary links for
// the platform (the Go version is a property of the main component), each
// with the licence detected in its source, without a serial number or
// timestamp, so that it repeats. A linked module without a detected licence
// fails it: the SBOM must say what every module's terms are.
func WriteSBOM(ctx context.Context, o SBOMOptions) error {
	cmd := exec.CommandContext(ctx, o.Tool, "app", "-json", "-licenses", "-assert-licenses",
		"-noserial", "-notimestamp", "-main", o.Main, "-output", o.Out, ".")
	cmd.Dir = o.SourceDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+o.Platform.OS, "GOARCH="+o.Platform.Architecture, "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("sbom: %s: %w\n%s", o.Tool, err, out)
	}
	data, err := os.ReadFile(o.Out)
	if err != nil {
		return fmt.Errorf("sbom: %w", err)
	}
	missing, err := Unlicensed(data)
	if err != nil {
		return fmt.Errorf("sbom %s: %w", o.Out, err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("sbom %s: no licence detected for %s", o.Out, strings.Join(missing, ", "))
	}
	return nil
}

// cdxComponent is the part of a CycloneDX component the check reads.
type cdxComponent struct {
	Name     string            `json:"name"`
	Version  string            `json:"version"`
	Licenses []json.RawMessage `json:"licenses"`
}

// Unlicensed returns the library components of a CycloneDX JSON document
// that carry no licence.
func Unlicensed(doc []byte) ([]string, error) {
	var bom struct {
		Components []cdxComponent `json:"components"`
	}
	if err := json.Unmarshal(doc, &bom); err != nil {
		return nil, fmt.Errorf("sbom: %w", err)
	}
	if len(bom.Components) == 0 {
		return nil, fmt.Errorf("sbom: no components")
	}
	var missing []string
	for _, c := range bom.Components {
		if len(c.Licenses) == 0 {
			missing = append(missing, c.Name+"@"+c.Version)
		}
	}
	return missing, nil
}
