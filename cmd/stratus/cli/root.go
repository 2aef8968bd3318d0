// Package cli builds the stratus command tree. It holds no control logic:
// each subcommand parses flags and calls into pkg/ccm (the daemon, through
// the same entry point an out-of-tree provider's main uses),
// internal/explain, internal/teardown, internal/sandbox or pkg/localcloud.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/stratus-ccm/stratus/internal/version"
	"github.com/stratus-ccm/stratus/pkg/ccm"
)

// CCMBinaryName is the name under which the binary runs the daemon directly.
const CCMBinaryName = "cloud-controller-manager"

// Main runs the command line and returns the process exit code.
func Main(ctx context.Context, args []string) int {
	// The daemon serves upstream's rest_client_* metrics on the registry
	// it serves by default; client-go's hooks are set before any client.
	if err := ccm.InstallClientMetrics(ctrlmetrics.Registry); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	var cmd *cobra.Command
	switch filepath.Base(args[0]) {
	case CCMBinaryName:
		cmd = NewControllerManagerCommand()
		cmd.Use = CCMBinaryName
	case PluginBinaryName:
		// kubectl runs a plugin by its file name; help says how it is typed.
		cmd = NewRootCommand()
		cmd.Use = "kubectl stratus"
	default:
		cmd = NewRootCommand()
	}
	cmd.SetArgs(args[1:])
	err := cmd.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
	}
	return exitCode(err)
}

// exitCode is 0 without an error, the code an error carries (teardown's
// "objects remain" is 2), else 1.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	return 1
}

// NewRootCommand returns the stratus command with every subcommand.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "stratus",
		Short:         "Stratus: a Kubernetes cloud-controller-manager",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(NewControllerManagerCommand(), newVersionCommand(), newExplainCommand())
	for _, c := range extraCommands() {
		root.AddCommand(c)
	}
	return strict(root)
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout(), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: '' or json")
	return cmd
}

func printVersion(w io.Writer, output string) error {
	info := version.Get()
	switch strings.ToLower(output) {
	case "":
		_, err := fmt.Fprintln(w, info.String())
		return err
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	default:
		return fmt.Errorf("--output=%s: must be empty or json", output)
	}
}
