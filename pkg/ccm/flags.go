package ccm

import (
	"encoding/csv"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// addConfigFlags adds cfg.Flags to fs and applies cfg.FlagDefaults, the
// two ways a provider's main shapes upstream's command: extra flag sets
// passed to NewCloudControllerManagerCommand, and option defaults set
// before it (DigitalOcean's and kube-vip's mains). Every mistake is
// returned at once, for the command to report when it runs.
func addConfigFlags(fs *pflag.FlagSet, cfg Config) error {
	var errs []error
	for _, set := range cfg.Flags.Order {
		cfg.Flags.FlagSets[set].VisitAll(func(f *pflag.Flag) {
			switch {
			case fs.Lookup(f.Name) != nil:
				errs = append(errs, fmt.Errorf("provider flag --%s (flag set %q): the daemon already has a flag of that name", f.Name, set))
			case f.Shorthand != "" && fs.ShorthandLookup(f.Shorthand) != nil:
				errs = append(errs, fmt.Errorf("provider flag --%s (flag set %q): shorthand -%s is taken", f.Name, set, f.Shorthand))
			default:
				fs.AddFlag(f)
			}
		})
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.FlagDefaults)) {
		f := fs.Lookup(name)
		if f == nil {
			errs = append(errs, fmt.Errorf("FlagDefaults: the daemon has no flag --%s", name))
			continue
		}
		if err := setDefault(f, cfg.FlagDefaults[name]); err != nil {
			errs = append(errs, fmt.Errorf("FlagDefaults: --%s=%s: %w", name, cfg.FlagDefaults[name], err))
		}
	}
	return errors.Join(errs...)
}

// setDefault makes value the flag's default: the value it has unless the
// command line sets it, and the default its help shows. A list flag's
// default is replaced, not appended to, so that the command line replaces
// it in turn, as it replaces a built-in default.
func setDefault(f *pflag.Flag, value string) error {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		var items []string
		if value != "" {
			var err error
			if items, err = csv.NewReader(strings.NewReader(value)).Read(); err != nil {
				return fmt.Errorf("not a comma-separated list: %w", err)
			}
		}
		if err := sv.Replace(items); err != nil {
			return fmt.Errorf("set default: %w", err)
		}
	} else if err := f.Value.Set(value); err != nil {
		return fmt.Errorf("set default: %w", err)
	}
	f.DefValue = f.Value.String()
	return nil
}
