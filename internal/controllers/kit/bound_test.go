package kit_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
)

func TestBoundMessageKeepsShortMessages(t *testing.T) {
	t.Parallel()
	for _, msg := range []string{"", "Ensured load balancer", `annotation x: invalid value "5m": want a duration`} {
		if got := kit.BoundMessage(msg); got != msg {
			t.Errorf("BoundMessage(%q) = %q, want it unchanged", msg, got)
		}
	}
}

func TestBoundMessageQuotesLongValuesByStartAndLength(t *testing.T) {
	t.Parallel()
	val := strings.Repeat("x", 10240)
	msg := fmt.Sprintf("annotation localcloud.stratus.io/health-check-interval: invalid value %q: want a duration between 1ms and 1h", val)
	got := kit.BoundMessage(msg)
	if len(got) > kit.MaxMessage {
		t.Fatalf("bounded message is %d bytes, over %d", len(got), kit.MaxMessage)
	}
	for _, want := range []string{"health-check-interval", `"\"` + strings.Repeat("x", kit.QuotedPrefix-1), "(10242 bytes)", "want a duration between 1ms and 1h"} {
		if !strings.Contains(got, want) {
			t.Errorf("bounded message %q lacks %q", got, want)
		}
	}
}

func TestBoundMessageCutsTheTailOfManyValues(t *testing.T) {
	t.Parallel()
	msg := strings.Repeat("node-with-a-name ", 200) + "é"
	got := kit.BoundMessage(msg)
	if len(got) > kit.MaxMessage || !utf8.ValidString(got) {
		t.Fatalf("bounded message is %d bytes (valid UTF-8: %t), want at most %d", len(got), utf8.ValidString(got), kit.MaxMessage)
	}
	if !strings.HasPrefix(got, "node-with-a-name node-with-a-name") || !strings.Contains(got, fmt.Sprintf("(%d bytes in all)", len(msg))) {
		t.Errorf("bounded message %q does not keep the start and say the length", got)
	}
}

type noteRecorder struct{ notes []string }

func (r *noteRecorder) Eventf(_, _ runtime.Object, _, _, _, note string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(note, args...))
}

func TestRecorderBoundsNotes(t *testing.T) {
	t.Parallel()
	r := &noteRecorder{}
	kit.Recorder(r).Eventf(&corev1.Service{}, nil, corev1.EventTypeWarning, "R", "A", "Error: %v", strings.Repeat("y", 5000))
	kit.Recorder(r).Eventf(&corev1.Service{}, nil, corev1.EventTypeNormal, "R", "A", "100%% done %d", 1)
	if len(r.notes) != 2 || len(r.notes[0]) > kit.MaxMessage || !strings.Contains(r.notes[0], "(5000 bytes)") {
		t.Errorf("notes %q: want the first bounded with the value's length", r.notes)
	}
	if r.notes[1] != "100% done 1" {
		t.Errorf("note %q, want the formatted note unchanged", r.notes[1])
	}
}
