package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// Environment variables the client commands read. The sandbox's env file
// exports all of them, so that the commands default to its cluster.
const (
	EnvURL   = "LOCALCLOUD_URL"
	EnvToken = "LOCALCLOUD_TOKEN"
	// EnvCluster is the default of routes --cluster and the cluster tag
	// instances create adds.
	EnvCluster = "LOCALCLOUD_CLUSTER"
	// EnvRegion and EnvZone are the defaults of instances create.
	EnvRegion = "LOCALCLOUD_REGION"
	EnvZone   = "LOCALCLOUD_ZONE"
)

// envOr returns the environment variable's value, or def when unset.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// NewCommand returns the `localcloud` command with its subcommands.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:           "localcloud",
		Short:         "Run or talk to localcloud, the embedded cloud",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	g := &globals{}
	pf := cmd.PersistentFlags()
	pf.StringVar(&g.url, "url", "", "localcloud API URL (default $"+EnvURL+")")
	pf.StringVar(&g.token, "token", "", "bearer token (default $"+EnvToken+")")
	pf.StringVar(&g.tokenFile, "token-file", "", "file holding the bearer token (for serve: the token to require)")
	pf.StringVarP(&g.output, "output", "o", "table", "output format: table or json")
	cmd.AddCommand(newServeCommand(g), newInstancesCommand(g), newLBsCommand(g), newRoutesCommand(g), newStatsCommand(g), newConfigCommand(g))
	return cmd
}

type globals struct {
	url, token, tokenFile, output string
}

func (g *globals) client() (*client.Client, error) {
	url := firstNonEmpty(g.url, os.Getenv(EnvURL))
	if url == "" {
		return nil, fmt.Errorf("no localcloud URL: set --url or $%s", EnvURL)
	}
	token := firstNonEmpty(g.token, os.Getenv(EnvToken))
	if token == "" && g.tokenFile != "" {
		data, err := os.ReadFile(g.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("read --token-file: %w", err)
		}
		token = strings.TrimSpace(string(data))
	}
	if token == "" {
		return nil, fmt.Errorf("no token: set --token, --token-file or $%s", EnvToken)
	}
	return client.New(url, token)
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// render prints v as JSON, or as a table built by rows.
func (g *globals) render(w io.Writer, v any, header []string, rows func() [][]string) error {
	switch g.output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "table", "":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, r := range rows() {
			_, _ = fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		return tw.Flush()
	}
	return fmt.Errorf("--output %q: want table or json", g.output)
}

func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// parseTags reads repeated key=value flags.
func parseTags(flag string, vals []string) (map[string]string, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, v := range vals {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want key=value", flag, v)
		}
		out[k] = val
	}
	return out, nil
}

func tagString(tags map[string]string) string {
	var parts []string
	for k, v := range tags {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(sorted(parts), ",")
}
