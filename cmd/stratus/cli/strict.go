package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// strict makes every command group in the tree under c refuse a word it
// does not know, with a suggestion and a non-zero exit. cobra checks for
// unknown subcommands at the root only: one level down, a typo
// (`stratus localcloud config sett errorRate=1`) would print the group's
// help and exit 0, so a script would believe it worked. A group called
// alone still prints its help.
func strict(c *cobra.Command) *cobra.Command {
	for _, sub := range c.Commands() {
		strict(sub)
	}
	if c.HasSubCommands() && !c.Runnable() {
		c.Args = unknownSubcommand
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	return c
}

// unknownSubcommand is the Args check of a command group: any argument is
// a subcommand it does not have.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default, set only where it suggests itself
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		fmt.Fprintf(&b, "\n\nDid you mean this?\n\t%s\n", strings.Join(s, "\n\t"))
	}
	fmt.Fprintf(&b, "\nRun '%s --help' for its commands", cmd.CommandPath())
	return fmt.Errorf("%s", b.String())
}
