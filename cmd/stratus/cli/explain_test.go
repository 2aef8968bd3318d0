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
