package kit

import (
	"fmt"
	"regexp"
	"strconv"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// Limits of the messages the controllers write. The API server refuses an
// events.k8s.io/v1 Event whose note exceeds 1 kB, and a refused event
// leaves the object without any visible reason; a condition's message may
// be 32 kB, but one that repeats a user's 10 kB annotation value helps no
// one. Values are quoted by their start and their length instead.
const (
	// MaxMessage is the longest message (in bytes) an event or condition
	// gets: under the API server's 1,024-byte limit on an event's note.
	MaxMessage = 1000
	// MaxQuoted is the longest quoted value or unbroken token kept whole
	// in a message; a longer one keeps its first QuotedPrefix bytes and
	// says how long it was.
	MaxQuoted    = 128
	QuotedPrefix = 48
)

// longQuoted matches a double-quoted Go string (escapes included) or an
// unbroken run of non-space characters, either longer than MaxQuoted.
var longQuoted = regexp.MustCompile(`"(?:[^"\\]|\\.){` + strconv.Itoa(MaxQuoted) + `,}"|[^\s"]{` + strconv.Itoa(MaxQuoted+1) + `,}`)

// BoundMessage shortens msg so that it fits MaxMessage: every quoted value
// or unbroken token longer than MaxQuoted becomes its start and its length
// ("aaaa…" (10240 bytes)), then, if the whole is still too long, its tail
// is cut and the cut said. A message already short enough is unchanged.
func BoundMessage(msg string) string {
	if len(msg) <= MaxMessage && !longQuoted.MatchString(msg) {
		return msg
	}
	msg = longQuoted.ReplaceAllStringFunc(msg, func(v string) string {
		return fmt.Sprintf("%q… (%d bytes)", prefix(v, QuotedPrefix), len(v))
	})
	if len(msg) <= MaxMessage {
		return msg
	}
	suffix := fmt.Sprintf("… (%d bytes in all)", len(msg))
	return prefix(msg, MaxMessage-len(suffix)) + suffix
}

// prefix returns at most n bytes of s, cut on a rune boundary.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// bounded is the recorder every controller gets: each note is formatted,
// then bounded (BoundMessage), so that no event is refused for its length.
type bounded struct{ next events.EventRecorder }

func (b bounded) Eventf(obj, related runtime.Object, eventType, reason, action, note string, args ...any) {
	b.next.Eventf(obj, related, eventType, reason, action, "%s", BoundMessage(fmt.Sprintf(note, args...)))
}
