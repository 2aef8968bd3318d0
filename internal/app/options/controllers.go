package options

import (
	"fmt"
	"sort"
	"strings"
)

// Controller is one controller as the flags know it: the names
// --controllers and a leader migration configuration accept for it, and
// whether '*' enables it. The daemon's controller table (internal/app)
// holds one per controller, beside what starts it; the options see only
// this part, so they validate a provider binary's extra controllers the
// same way as the built-in ones.
type Controller struct {
	// Name is the controller package's ControllerName: the --controllers
	// entry, the leader migration name, the event reporter and field
	// manager.
	Name string
	// Aliases are other names --controllers accepts for it (upstream's
	// pre-1.28 names), so that old manifests keep working.
	Aliases []string
	// LegacyMigrationNames are names upstream's own default
	// LeaderMigrationConfiguration still gives it (kube-controller-manager's
	// names from before 1.28). A cloud-controller-manager matches
	// migration entries by exact name, so these match none of its
	// controllers, in upstream and in Stratus alike; they are accepted so
	// that upstream's default and files written against it load unchanged.
	LegacyMigrationNames []string
	// OffByDefault leaves it out of '*'.
	OffByDefault bool
}

// Names returns the controllers' names in order.
func Names(known []Controller) []string {
	out := make([]string, len(known))
	for i, e := range known {
		out[i] = e.Name
	}
	return out
}

// Aliases maps every alias in known to its controller's name.
func Aliases(known []Controller) map[string]string {
	out := map[string]string{}
	for _, e := range known {
		for _, a := range e.Aliases {
			out[a] = e.Name
		}
	}
	return out
}

// ResolveControllers turns the --controllers list into the set of enabled
// names, with upstream's semantics: '*' enables every default controller,
// 'name' enables one, '-name' disables one; a disabled name wins. known
// lists every controller in start order, built-in ones first.
func ResolveControllers(spec []string, known []Controller) ([]string, error) {
	byName := map[string]bool{}
	for _, k := range known {
		byName[k.Name] = true
	}
	alias := Aliases(known)
	canonical := func(n string) (string, error) {
		if a, ok := alias[n]; ok {
			return a, nil
		}
		if byName[n] {
			return n, nil
		}
		return "", fmt.Errorf("--controllers=%s: unknown controller %q (known: %s; aliases: %s)",
			strings.Join(spec, ","), n, strings.Join(Names(known), ", "), aliasList(alias))
	}
	star := false
	enabled, disabled := map[string]bool{}, map[string]bool{}
	for _, raw := range spec {
		item := strings.TrimSpace(raw)
		switch {
		case item == "*":
			star = true
		case strings.HasPrefix(item, "-"):
			n, err := canonical(strings.TrimPrefix(item, "-"))
			if err != nil {
				return nil, err
			}
			disabled[n] = true
		case item == "":
			return nil, fmt.Errorf("--controllers=%s: empty controller name", strings.Join(spec, ","))
		default:
			n, err := canonical(item)
			if err != nil {
				return nil, err
			}
			enabled[n] = true
		}
	}
	var both []string
	for n := range disabled {
		if enabled[n] {
			both = append(both, n)
		}
	}
	if len(both) > 0 {
		sort.Strings(both)
		return nil, fmt.Errorf("--controllers=%s: %s both enabled and disabled", strings.Join(spec, ","), strings.Join(both, ", "))
	}
	var out []string
	for _, k := range known {
		if disabled[k.Name] {
			continue
		}
		if (star && !k.OffByDefault) || enabled[k.Name] {
			out = append(out, k.Name)
		}
	}
	return out, nil
}

func aliasList(alias map[string]string) string {
	var out []string
	for a, n := range alias {
		out = append(out, a+"="+n)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
