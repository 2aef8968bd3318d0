package options

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cmconfig "k8s.io/controller-manager/config"
	migrationconfig "k8s.io/controller-manager/pkg/leadermigration/config"
)

// ComponentName is the component a leader migration configuration names to
// give a controller to this process: Stratus takes the upstream
// cloud-controller-manager's place, so it answers to that name (and "*").
const ComponentName = "cloud-controller-manager"

// MigrationOptions are upstream's leader migration flags.
type MigrationOptions struct {
	// Enabled is --enable-leader-migration.
	Enabled bool
	// ConfigFile is --leader-migration-config; empty means upstream's default
	// configuration for the cloud-controller-manager.
	ConfigFile string
}

// addSwitchFlags registers the flags for switching from another
// cloud-controller-manager: upstream's leader migration, and observe mode.
func (o *Options) addSwitchFlags(fs *pflag.FlagSet) {
	o.Migration.addFlags(fs)
	fs.BoolVar(&o.Observe, "observe", o.Observe,
		"Observe mode: run beside the cloud-controller-manager in charge, read everything and change nothing (API writes are server-side dry runs, mutating cloud calls are refused), and report what would have been done. Implies no leader election.")
}

func (m *MigrationOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&m.Enabled, "enable-leader-migration", m.Enabled,
		"Whether to enable controller leader migration: the controllers named in the migration configuration run under the migration lease, the others under the main one.")
	fs.StringVar(&m.ConfigFile, "leader-migration-config", m.ConfigFile,
		"Path to the LeaderMigrationConfiguration file (controllermanager.config.k8s.io/v1, v1beta1 or v1alpha1), or empty for upstream's default configuration.")
}

// MigrationPlan is a loaded leader migration configuration, reduced to what
// the controller manager needs: the lease and which controllers it guards.
type MigrationPlan struct {
	LeaseName string
	// config is the loaded configuration, for /configz.
	config *cmconfig.LeaderMigrationConfiguration
	// migrated holds the controllers this process runs under the migration
	// lease; unowned the ones another component runs, which this process
	// must not start at all.
	migrated map[string]bool
	unowned  map[string]bool
}

// place says under which lock a controller runs.
type place int

const (
	placeMain place = iota
	placeMigration
	placeNowhere
)

func (p *MigrationPlan) place(controller string) place {
	switch {
	case p == nil:
		return placeMain
	case p.migrated[controller]:
		return placeMigration
	case p.unowned[controller]:
		return placeNowhere
	default:
		return placeMain
	}
}

// LoadMigration reads, decodes (with upstream's scheme, strictly) and
// validates the leader migration configuration, and checks it against the
// rest of the flags. It returns nil when migration is off.
func LoadMigration(o *Options, table []Controller) (*MigrationPlan, error) {
	m := o.Migration
	if o.Observe && m.Enabled {
		return nil, errors.New("--observe with --enable-leader-migration: observe mode takes no lease and runs no controller for real; choose one")
	}
	if !m.Enabled {
		if m.ConfigFile != "" {
			return nil, fmt.Errorf("--leader-migration-config=%s: needs --enable-leader-migration (upstream ignores the file without it; Stratus refuses rather than run unmigrated)", m.ConfigFile)
		}
		return nil, nil
	}
	if !o.LeaderElect {
		return nil, errors.New("--enable-leader-migration: needs --leader-elect=true (leader migration is a second lease next to the leader election one)")
	}
	where := "--leader-migration-config=" + m.ConfigFile
	cfg := migrationconfig.DefaultLeaderMigrationConfiguration()
	if m.ConfigFile == "" {
		where = "upstream's default leader migration configuration"
	} else {
		var err error
		if cfg, err = migrationconfig.ReadLeaderMigrationConfiguration(m.ConfigFile); err != nil {
			return nil, fmt.Errorf("%s: %w (want kind LeaderMigrationConfiguration, apiVersion controllermanager.config.k8s.io/v1)", where, err)
		}
	}
	errs := migrationconfig.ValidateLeaderMigrationConfiguration(cfg)
	errs = append(errs, validateMigrationForStratus(cfg, o, table)...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", where, errs.ToAggregate())
	}
	plan := &MigrationPlan{LeaseName: cfg.LeaderName, config: cfg, migrated: map[string]bool{}, unowned: map[string]bool{}}
	for _, l := range cfg.ControllerLeaders {
		if l.Component == ComponentName || l.Component == "*" {
			plan.migrated[l.Name] = true
		} else {
			plan.unowned[l.Name] = true
		}
	}
	return plan, nil
}

// validateMigrationForStratus adds what Stratus needs beyond upstream's own
// validation: only Lease locks, a lease distinct from the main one, and
// controller names that exist (a typo would otherwise silently leave the
// controller under the main lock, in two processes at once).
func validateMigrationForStratus(cfg *cmconfig.LeaderMigrationConfiguration, o *Options, table []Controller) field.ErrorList {
	var errs field.ErrorList
	if cfg.ResourceLock != migrationconfig.ResourceLockLeases {
		errs = append(errs, field.NotSupported(field.NewPath("resourceLock"), cfg.ResourceLock, []string{migrationconfig.ResourceLockLeases}))
	}
	if cfg.LeaderName == o.LeaderElectName {
		errs = append(errs, field.Invalid(field.NewPath("leaderName"), cfg.LeaderName,
			"must differ from --leader-elect-resource-name: the migration lease sits next to the main one"))
	}
	known, legacy, alias := map[string]bool{}, map[string]bool{}, Aliases(table)
	for _, e := range table {
		known[e.Name] = true
		for _, n := range e.LegacyMigrationNames {
			legacy[n] = true
		}
	}
	seen := map[string]bool{}
	for i, l := range cfg.ControllerLeaders {
		p := field.NewPath("controllerLeaders").Index(i).Child("name")
		switch {
		case l.Name == "":
			// upstream's validation reports it
		case alias[l.Name] != "":
			errs = append(errs, field.Invalid(p, l.Name, fmt.Sprintf("migration entries match controllers by their full name; use %q", alias[l.Name])))
		case !known[l.Name] && !legacy[l.Name]:
			errs = append(errs, field.NotSupported(p, l.Name, MigrationNames(table)))
		case seen[l.Name]:
			errs = append(errs, field.Duplicate(p, l.Name))
		}
		seen[l.Name] = true
	}
	return errs
}

// MigrationNames are the names a migration entry may use: the
// controllers' and upstream's legacy ones, which match no controller.
func MigrationNames(table []Controller) []string {
	var out []string
	for _, e := range table {
		out = append(out, e.Name)
		out = append(out, e.LegacyMigrationNames...)
	}
	sort.Strings(out)
	return out
}

// Split divides the enabled controllers between the main and the migration
// lease, dropping the ones another component owns.
func (p *MigrationPlan) Split(enabled []string) (mainSet, migrated, unowned []string) {
	for _, n := range enabled {
		switch p.place(n) {
		case placeMain:
			mainSet = append(mainSet, n)
		case placeMigration:
			migrated = append(migrated, n)
		case placeNowhere:
			unowned = append(unowned, n)
		}
	}
	return mainSet, migrated, unowned
}

// Config is the loaded configuration, for /configz; nil when migration is
// off.
func (p *MigrationPlan) Config() *cmconfig.LeaderMigrationConfiguration {
	if p == nil {
		return nil
	}
	return p.config
}

func (p *MigrationPlan) String() string {
	if p == nil {
		return "off"
	}
	var m []string
	for n := range p.migrated {
		m = append(m, n)
	}
	sort.Strings(m)
	return p.LeaseName + ": " + strings.Join(m, ",")
}
