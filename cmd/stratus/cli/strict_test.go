package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// execute runs the stratus command tree with args and returns its output
// and error, as Main would see them.
func execute(args ...string) (string, error) {
	root := NewRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// commands returns every command under c, c included.
func commands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		out = append(out, commands(sub)...)
	}
	return out
}

// path is a command's words after the root's name.
func path(c *cobra.Command) []string { return strings.Fields(c.CommandPath())[1:] }

// The typos a new user made: each fails, names the word it did not know
// and suggests the right one.
func TestTypoFailsWithSuggestion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args    []string
		unknown string
		suggest string
	}{
		{[]string{"localcloud", "config", "sett", "errorRate=1"}, `"sett"`, "set"},
		{[]string{"localcloud", "lbs", "lsit"}, `"lsit"`, "list"},
		{[]string{"localcloud", "routes", "stats"}, `"stats"`, ""},
		{[]string{"lcoalcloud", "instances", "list"}, `"lcoalcloud"`, "localcloud"},
		{[]string{"localcloud", "instances", "lst"}, `"lst"`, "list"},
	}
	for _, c := range cases {
		out, err := execute(c.args...)
		if err == nil {
			t.Errorf("stratus %s succeeded; output:\n%s", strings.Join(c.args, " "), out)
			continue
		}
		if !strings.Contains(err.Error(), "unknown command "+c.unknown) {
			t.Errorf("stratus %s: %v; want it to name %s", strings.Join(c.args, " "), err, c.unknown)
		}
		if _, hint, _ := strings.Cut(err.Error(), "Did you mean this?"); c.suggest != "" && !strings.Contains(hint, "\t"+c.suggest+"\n") {
			t.Errorf("stratus %s: %v; want the suggestion %q", strings.Join(c.args, " "), err, c.suggest)
		}
	}
}

// Every command refuses what it does not know: a group an unknown
// subcommand, every command an unknown flag. A group alone prints its help.
func TestEveryCommandRefusesUnknownWords(t *testing.T) {
	t.Parallel()
	for _, c := range commands(NewRootCommand()) {
		p := path(c)
		if _, err := execute(append(p, "--no-such-flag")...); err == nil || !strings.Contains(err.Error(), "unknown flag: --no-such-flag") {
			t.Errorf("stratus %s --no-such-flag: err = %v, want an unknown flag error", strings.Join(p, " "), err)
		}
		if !c.HasSubCommands() {
			if c.Args == nil {
				t.Errorf("stratus %s declares no Args: cobra would accept any word", strings.Join(p, " "))
			}
			continue
		}
		if _, err := execute(append(p, "no-such-command")...); err == nil || !strings.Contains(err.Error(), `unknown command "no-such-command"`) {
			t.Errorf("stratus %s no-such-command: err = %v, want an unknown command error", strings.Join(p, " "), err)
		}
		out, err := execute(p...)
		if err != nil || !strings.Contains(out, "Available Commands:") {
			t.Errorf("stratus %s alone: err = %v, want its help; output:\n%s", strings.Join(p, " "), err, out)
		}
	}
}

// Main turns the refusal into a non-zero exit code.
func TestMainExitsNonZeroOnTypo(t *testing.T) {
	t.Parallel()
	if code := Main(context.Background(), []string{"stratus", "localcloud", "lbs", "lsit"}); code == 0 {
		t.Error("stratus localcloud lbs lsit exited 0")
	}
}
