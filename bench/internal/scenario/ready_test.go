package scenario

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/bench/internal/config"
	"github.com/stratus-ccm/stratus/bench/internal/harness"
	"github.com/stratus-ccm/stratus/bench/internal/results"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// TestReadyClusterFailureReportsItsCause starts a contestant that exits at
// once: readyCluster must return the contestant's failure (not panic in its
// cleanup) and leave none of the cluster's processes running.
func TestReadyClusterFailureReportsItsCause(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver, kwok and localcloud: not a -short test")
	}
	bin, err := localcluster.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := harness.CheckBinaries(bin, "etcd", "kube-apiserver", "kwok", "stratus"); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(func(string) string { return "" }, "/r")
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{BinDir: bin, WorkDir: t.TempDir(), S: c.S, PhaseTimeout: 2 * time.Minute, Log: io.Discard}
	dir, err := e.runDir("broken")
	if err != nil {
		t.Fatal(err)
	}
	broken := harness.Contestant{Name: "broken", Binary: "stratus", Subcommand: "controller-manager", Args: []string{"--no-such-flag"}}
	nodes := names(harness.NodeName, 1, 3)
	r, err := e.readyCluster(context.Background(), dir, results.CloudIdeal, 0, broken, nodes, nodes, nil)
	if err == nil {
		r.stop()
		t.Fatal("readyCluster with a contestant that cannot start succeeded")
	}
	if !strings.Contains(err.Error(), "start broken") || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("error does not say which step failed and why: %v", err)
	}
	if err := sweep(dir); err != nil {
		t.Fatal(err)
	}
}
