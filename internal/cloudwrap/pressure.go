package cloudwrap

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CPUPressure reports the share of the recent past in which some task on
// the machine waited for a CPU, in percent; ok is false where the kernel
// does not say.
type CPUPressure func() (percent float64, ok bool)

// pressureWindow: a reading more than this after the previous one is the
// kernel's 10-s average rather than the share of the whole gap.
const pressureWindow = 10 * time.Second

// NewCPUPressure reads /proc/pressure/cpu (Linux 4.20 and later, with PSI
// on): the machine's pressure (a container sees its host's), which is what
// slows a call's answer. Each reading is the share of the time since the
// previous one (from the "some" line's total stall time), or, first and
// after a long gap, the kernel's 10-s average: an answer waits for a CPU
// in the moment, which a 10-s average smooths out.
func NewCPUPressure() CPUPressure {
	r := &pressureReader{path: "/proc/pressure/cpu", now: time.Now}
	return r.read
}

type pressureReader struct {
	path string
	now  func() time.Time

	mu    sync.Mutex
	total uint64 // the "some" line's total stall, microseconds
	at    time.Time
}

func (r *pressureReader) read() (float64, bool) {
	b, err := os.ReadFile(r.path)
	if err != nil {
		return 0, false
	}
	avg10, total, ok := parseCPUPressure(string(b))
	if !ok {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	prevTotal, prevAt := r.total, r.at
	r.total, r.at = total, now
	gap := now.Sub(prevAt)
	if prevAt.IsZero() || total < prevTotal || gap <= 0 || gap > pressureWindow {
		return avg10, true
	}
	return min(100, 100*float64(total-prevTotal)/float64(gap.Microseconds())), true
}

// parseCPUPressure reads the "some" line: its avg10 and its total.
func parseCPUPressure(s string) (avg10 float64, total uint64, ok bool) {
	for line := range strings.Lines(s) {
		fields := strings.Fields(line)
		if len(fields) < 5 || fields[0] != "some" {
			continue
		}
		a, okA := strings.CutPrefix(fields[1], "avg10=")
		t, okT := strings.CutPrefix(fields[4], "total=")
		if !okA || !okT {
			return 0, 0, false
		}
		f, err1 := strconv.ParseFloat(a, 64)
		n, err2 := strconv.ParseUint(t, 10, 64)
		return f, n, err1 == nil && err2 == nil
	}
	return 0, 0, false
}
