package options_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratus-ccm/stratus/internal/app/options"
)

func migrationFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "migration.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const goodMigration = `apiVersion: controllermanager.config.k8s.io/v1
kind: LeaderMigrationConfiguration
leaderName: ccm-migration
controllerLeaders:
  - name: service-lb-controller
    component: "*"
  - name: cloud-node-lifecycle-controller
    component: cloud-controller-manager
  - name: node-route-controller
    component: kube-controller-manager
`

func TestLeaderMigrationConfigLoaded(t *testing.T) {
	o, err := parse(t, "--cloud-provider=x", "--enable-leader-migration", "--leader-migration-config="+migrationFile(t, goodMigration))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := options.LoadMigration(o, o.Known())
	if err != nil || plan == nil {
		t.Fatalf("plan %v, err %v", plan, err)
	}
	if plan.LeaseName != "ccm-migration" {
		t.Errorf("lease %q", plan.LeaseName)
	}
	mainSet, migrated, unowned := plan.Split(options.Names(known()))
	if want := []string{"cloud-node-controller", "node-ipam-controller"}; !slices.Equal(mainSet, want) {
		t.Errorf("main lease runs %v, want %v", mainSet, want)
	}
	if want := []string{"cloud-node-lifecycle-controller", "service-lb-controller"}; !slices.Equal(migrated, want) {
		t.Errorf("migration lease runs %v, want %v", migrated, want)
	}
	if want := []string{"node-route-controller"}; !slices.Equal(unowned, want) {
		t.Errorf("left to the other component: %v, want %v", unowned, want)
	}
}

// Upstream's default configuration names the kube-controller-manager's
// old controller names; a cloud-controller-manager matches them exactly,
// so only the node lifecycle controller moves, in upstream and here.
func TestLeaderMigrationDefaultIsUpstreams(t *testing.T) {
	o, err := parse(t, "--cloud-provider=x", "--enable-leader-migration")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := options.LoadMigration(o, o.Known())
	if err != nil {
		t.Fatal(err)
	}
	if plan.LeaseName != "cloud-provider-extraction-migration" {
		t.Errorf("default lease %q", plan.LeaseName)
	}
	_, migrated, unowned := plan.Split(options.Names(known()))
	if !slices.Equal(migrated, []string{"cloud-node-lifecycle-controller"}) || len(unowned) != 0 {
		t.Errorf("migrated %v, unowned %v", migrated, unowned)
	}
}

func TestLeaderMigrationOffRunsAllUnderMain(t *testing.T) {
	o, err := parse(t, "--cloud-provider=x")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := options.LoadMigration(o, o.Known())
	if err != nil || plan != nil {
		t.Fatalf("plan %v, err %v", plan, err)
	}
	mainSet, migrated, unowned := plan.Split(options.Names(known()))
	if !slices.Equal(mainSet, options.Names(known())) || len(migrated)+len(unowned) != 0 {
		t.Errorf("split without migration: %v %v %v", mainSet, migrated, unowned)
	}
}

func TestBadLeaderMigrationRefused(t *testing.T) {
	withLeader := func(leaders string) string {
		return "apiVersion: controllermanager.config.k8s.io/v1\nkind: LeaderMigrationConfiguration\nleaderName: m\ncontrollerLeaders:\n" + leaders
	}
	cases := map[string]struct {
		file  string
		extra []string
		want  []string
	}{
		"unknown controller": {file: withLeader("  - name: servce-lb-controller\n    component: \"*\"\n"),
			want: []string{"controllerLeaders[0].name", "servce-lb-controller", "service-lb-controller"}},
		"alias": {file: withLeader("  - name: service\n    component: \"*\"\n"),
			want: []string{"controllerLeaders[0].name", `use "service-lb-controller"`}},
		"duplicate": {file: withLeader("  - name: service-lb-controller\n    component: \"*\"\n  - name: service-lb-controller\n    component: \"*\"\n"),
			want: []string{"controllerLeaders[1].name", "Duplicate"}},
		"no component": {file: withLeader("  - name: service-lb-controller\n"),
			want: []string{"controllerLeaders[0].component", "Required"}},
		"wrong kind": {file: "apiVersion: controllermanager.config.k8s.io/v1\nkind: KubeControllerManagerConfiguration\nleaderName: m\n",
			want: []string{"KubeControllerManagerConfiguration", "kind LeaderMigrationConfiguration"}},
		"unknown field": {file: withLeader("  - name: service-lb-controller\n    component: \"*\"\n    lock: x\n"),
			want: []string{"lock"}},
		"endpoints lock": {file: "apiVersion: controllermanager.config.k8s.io/v1beta1\nkind: LeaderMigrationConfiguration\nleaderName: m\nresourceLock: endpoints\n",
			want: []string{"resourceLock", "endpoints"}},
		"no leader name": {file: "apiVersion: controllermanager.config.k8s.io/v1\nkind: LeaderMigrationConfiguration\n",
			want: []string{"leaderName", "Required"}},
		"same lease as main": {file: "apiVersion: controllermanager.config.k8s.io/v1\nkind: LeaderMigrationConfiguration\nleaderName: cloud-controller-manager\n",
			want: []string{"leaderName", "--leader-elect-resource-name"}},
		"file without enable": {extra: []string{"--leader-migration-config=/etc/m.yaml"},
			want: []string{"--leader-migration-config=/etc/m.yaml", "--enable-leader-migration"}},
		"migration without election": {extra: []string{"--enable-leader-migration", "--leader-elect=false"},
			want: []string{"--enable-leader-migration", "--leader-elect"}},
		"observe with migration": {extra: []string{"--enable-leader-migration", "--observe"},
			want: []string{"--observe", "--enable-leader-migration"}},
		"missing file": {extra: []string{"--enable-leader-migration", "--leader-migration-config=/nonexistent/m.yaml"},
			want: []string{"--leader-migration-config=/nonexistent/m.yaml"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"--cloud-provider=x"}, c.extra...)
			if c.file != "" {
				args = append(args, "--enable-leader-migration", "--leader-migration-config="+migrationFile(t, c.file))
			}
			_, err := parse(t, args...)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, err)
				}
			}
		})
	}
}
