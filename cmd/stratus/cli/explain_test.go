package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/internal/explain"
)

func TestPrintExplanationFromAStandby(t *testing.T) {
	var out bytes.Buffer
	ex := &explain.Explanation{Object: explain.Ref{Kind: explain.KindNode, Name: "n1"}, Replica: "b_2", Leader: "a_1"}
	err := printExplanation(&out, ex, time.Now())
	if !errors.Is(err, errNotLeader) || !strings.Contains(out.String(), "does not lead; the leader is a_1") {
		t.Errorf("standby answer printed %q, %v; want who leads and errNotLeader", out.String(), err)
	}
}

func TestPrintExplanationOfAnUnknownObject(t *testing.T) {
	var out bytes.Buffer
	ex := &explain.Explanation{Object: explain.Ref{Kind: explain.KindService, Namespace: "ns", Name: "x"}, Leading: true}
	if err := printExplanation(&out, ex, time.Now()); err != nil || !strings.Contains(out.String(), "No controller of the leader has acted on it") {
		t.Errorf("unknown object printed %q, %v", out.String(), err)
	}
}

func TestPluginBinaryNameRunsTheRootCommand(t *testing.T) {
	if code := Main(t.Context(), []string{"/usr/local/bin/" + PluginBinaryName, "explain", "pod", "x"}); code != 1 {
		t.Errorf("kubectl-stratus explain pod x exited %d, want 1 (a bad kind)", code)
	}
	if code := Main(t.Context(), []string{PluginBinaryName, "version"}); code != 0 {
		t.Errorf("kubectl-stratus version exited %d, want 0", code)
	}
}

// TestPrintExplanationSaysPacing: a call the pacer holds back now, and a
// sync whose calls waited without a retry, are both printed with why.
func TestPrintExplanationSaysPacing(t *testing.T) {
	now := time.Date(2026, 11, 26, 19, 0, 0, 0, time.UTC)
	ex := &explain.Explanation{Object: explain.Ref{Kind: explain.KindNode, Name: "n1"}, Leading: true, Known: true,
		Syncs:   []explain.Sync{{Controller: "cloud-node-controller", Time: now, Result: explain.ResultSuccess, Pacing: "paced: 1 cloud call(s) waited 2s in the client-side pacer, InstanceMetadata the longest (2s): slow start"}},
		Waiting: &explain.Wait{Controller: "cloud-node-controller", Operation: "InstanceMetadata", Since: now, Until: now.Add(3 * time.Second), Why: "the --cloud-api-qps ceiling of 1 calls/s"}}
	var out strings.Builder
	if err := printExplanation(&out, ex, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"    paced: 1 cloud call(s) waited 2s in the client-side pacer, InstanceMetadata the longest (2s): slow start\n",
		"  waiting now: cloud-node-controller's InstanceMetadata is held back by the client-side pacer until 2026-11-26T19:00:03Z (3s more): the --cloud-api-qps ceiling of 1 calls/s\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed:\n%s\nlacks %q", out.String(), want)
		}
	}
}
