package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

func newConfigCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show or change the realism knobs (latency, rate limit, faults, quotas)",
		Long: `Shows or changes the realism knobs of a running localcloud. Changes take effect
at once and are kept in localcloud's state, so they survive a restart.

Knobs (keys are exact-case):
` + knobList(),
	}
	get := &cobra.Command{
		Use: "get [KEY ...]", Short: "Show every knob, or the named ones",
		// Each KEY is checked against the knobs, with a suggestion.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			k, err := c.Config(cmd.Context())
			if err != nil {
				return err
			}
			keys := args
			if len(keys) == 0 {
				keys = api.KnobKeys()
			}
			rows := make([][]string, 0, len(keys))
			for _, key := range keys {
				v, err := k.Get(key)
				if err != nil {
					return err
				}
				rows = append(rows, []string{key, v})
			}
			return g.render(cmd.OutOrStdout(), k, []string{"KNOB", "VALUE"}, func() [][]string { return rows })
		},
	}
	set := &cobra.Command{
		Use:   "set KEY=VALUE [KEY=VALUE ...]",
		Short: "Change knobs; all or none are applied",
		Example: `  stratus localcloud config set errorRate=0.1 latency=50ms
  stratus localcloud config set quotas.loadBalancers=2 lbProvisioningTime=30s
  stratus localcloud config set errorRate=0 latency=0s   # back to normal`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := parseKnobArgs(args)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			k, err := c.UpdateConfig(cmd.Context(), p)
			if err != nil {
				return err
			}
			return g.render(cmd.OutOrStdout(), k, []string{"KNOB", "VALUE"}, func() [][]string {
				rows := make([][]string, 0, len(args))
				for _, a := range args {
					key, _, _ := strings.Cut(a, "=")
					v, _ := k.Get(key)
					rows = append(rows, []string{key, v})
				}
				return rows
			})
		},
	}
	cmd.AddCommand(get, set)
	return cmd
}

// parseKnobArgs turns KEY=VALUE arguments into one patch, refusing unknown
// keys and unparsable values before anything is sent.
func parseKnobArgs(args []string) (api.KnobsPatch, error) {
	var p api.KnobsPatch
	for _, a := range args {
		key, val, ok := strings.Cut(a, "=")
		if !ok || key == "" {
			return api.KnobsPatch{}, fmt.Errorf("%q: want KEY=VALUE, e.g. errorRate=0.1", a)
		}
		if err := p.Set(key, val); err != nil {
			return api.KnobsPatch{}, fmt.Errorf("%s: %w", a, err)
		}
	}
	return p, nil
}

func knobList() string {
	var b strings.Builder
	for _, k := range api.KnobKeys() {
		fmt.Fprintf(&b, "  %-26s %s\n", k, api.KnobHelp(k))
	}
	return b.String()
}
