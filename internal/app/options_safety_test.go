package app

import (
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
)

func TestSafetyFlagsDefaultsAndValues(t *testing.T) {
	o, err := parse(t, "--cloud-provider=x")
	if err != nil {
		t.Fatal(err)
	}
	want := nodelifecycle.DeletionCap{Window: nodelifecycle.DefaultDeletionWindow, MaxShare: nodelifecycle.DefaultMaxDeletionShare,
		MaxZoneShare: nodelifecycle.DefaultMaxZoneDeletionShare, Min: nodelifecycle.DefaultMinDeletions}
	if got := o.deletionCap(); got != want {
		t.Errorf("default cap %+v, want %+v", got, want)
	}
	o, err = parse(t, "--cloud-provider=x", "--node-deletion-window=1h", "--node-deletion-max-share=1",
		"--node-deletion-max-zone-share=0.5", "--node-deletion-min-per-window=7")
	if err != nil {
		t.Fatal(err)
	}
	want = nodelifecycle.DeletionCap{Window: time.Hour, MaxShare: 1, MaxZoneShare: 0.5, Min: 7}
	if got := o.deletionCap(); got != want {
		t.Errorf("cap %+v, want %+v", got, want)
	}
}

func TestSafetyFlagsBadValuesRejected(t *testing.T) {
	for _, arg := range []string{
		"--node-deletion-window=0s",
		"--node-deletion-max-share=0",
		"--node-deletion-max-share=1.5",
		"--node-deletion-max-zone-share=-0.1",
		"--node-deletion-min-per-window=0",
		"--cloud-provider-platforms=aws,on prem",
	} {
		_, err := parse(t, "--cloud-provider=x", arg)
		name, value, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if err == nil || !strings.Contains(err.Error(), "--"+name) || !strings.Contains(err.Error(), value[strings.LastIndex(value, ",")+1:]) {
			t.Errorf("%s: error %v, want one naming the flag and value", arg, err)
		}
	}
}
