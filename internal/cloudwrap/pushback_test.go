package cloudwrap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// A fast cloud's jitter is no pushback; an answer well past the
// operation's floor is, for pushbackMemory; a floor that has aged is
// replaced, so a cloud that moved further away stops counting as slow.
func TestPushbackFromSlowAnswers(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	p := newPushback(nil)
	p.answered(t0, "GetInstance", 2*time.Millisecond)
	for i, d := range []time.Duration{5 * time.Millisecond, 40 * time.Millisecond, 53 * time.Millisecond} {
		p.answered(t0.Add(time.Duration(i+1)*time.Second), "GetInstance", d)
	}
	if p.active(t0.Add(4 * time.Second)) {
		t.Fatal("answers within 2× the floor plus 50 ms counted as pushback")
	}
	// Another operation's floor is its own.
	p.answered(t0.Add(5*time.Second), "UpdateLoadBalancer", 300*time.Millisecond)
	if p.active(t0.Add(5 * time.Second)) {
		t.Fatal("an operation's first answer counted as slow")
	}
	p.answered(t0.Add(6*time.Second), "GetInstance", 60*time.Millisecond)
	if !p.active(t0.Add(6 * time.Second)) {
		t.Fatal("an answer 30× the floor is not pushback")
	}
	if !p.active(t0.Add(35 * time.Second)) {
		t.Fatal("pushback forgotten before pushbackMemory")
	}
	if p.active(t0.Add(37 * time.Second)) {
		t.Fatal("pushback remembered past pushbackMemory")
	}
	// A list slower than its floor is a bigger list, not pushback.
	q := newPushback(nil)
	q.answered(t0, "ListLoadBalancers", 80*time.Millisecond)
	q.answered(t0.Add(time.Second), "ListLoadBalancers", 400*time.Millisecond)
	if q.active(t0.Add(time.Second)) {
		t.Fatal("a slower list counted as pushback")
	}
	// Ten minutes later the 2 ms floor has aged: 80 ms answers become the
	// new floor after one more slow answer, then stop counting.
	later := t0.Add(10 * time.Minute)
	p.answered(later, "GetInstance", 80*time.Millisecond)
	p.answered(later.Add(time.Minute), "GetInstance", 85*time.Millisecond)
	if p.active(later.Add(time.Minute)) {
		t.Fatal("answers near an aged-out floor's successor counted as slow")
	}
}

// The machine's CPU pressure raises the bar for a slow answer by
// 1/(1-pressure), at most 5 times: what a busy machine alone makes of an
// answer is not the cloud's pushback, a cloud that slows down more still
// is; throttling counts whatever the pressure. The pressure is read at
// most once a second.
func TestBusyMachineRaisesTheBar(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	// Floor 5 ms: the bar is 2 × 5 + 50 = 60 ms on an idle machine.
	for _, c := range []struct {
		pressure   float64
		latency    time.Duration
		pushedBack bool
	}{
		{0, 61 * time.Millisecond, true},
		{50, 110 * time.Millisecond, false}, // bar 120 ms
		{50, 130 * time.Millisecond, true},
		{80, 290 * time.Millisecond, false}, // bar 300 ms
		{99, 290 * time.Millisecond, false}, // at most 5×: 300 ms
		{99, 310 * time.Millisecond, true},
	} {
		reads := 0
		p := newPushback(func() (float64, bool) { reads++; return c.pressure, true })
		p.answered(t0, "UpdateLoadBalancer", 5*time.Millisecond)
		p.answered(t0.Add(time.Second), "UpdateLoadBalancer", c.latency)
		p.answered(t0.Add(1500*time.Millisecond), "UpdateLoadBalancer", 5*time.Millisecond)
		if got := p.active(t0.Add(2 * time.Second)); got != c.pushedBack {
			t.Errorf("pressure %v%%, answer %v: pushback %v, want %v", c.pressure, c.latency, got, c.pushedBack)
		}
		if reads != 1 {
			t.Errorf("pressure read %d times within a second, want 1", reads)
		}
	}
	busy := newPushback(func() (float64, bool) { return 90, true })
	busy.mark(t0)
	if !busy.active(t0) {
		t.Fatal("a throttled answer on a busy machine is not pushback")
	}
	// Where the kernel does not say, the bar is the idle machine's.
	r := newPushback(func() (float64, bool) { return 0, false })
	r.answered(t0, "UpdateLoadBalancer", 5*time.Millisecond)
	r.answered(t0.Add(time.Second), "UpdateLoadBalancer", 61*time.Millisecond)
	if !r.active(t0.Add(time.Second)) {
		t.Fatal("without a pressure reading a slow answer is not pushback")
	}
}

func TestParseCPUPressure(t *testing.T) {
	t.Parallel()
	in := "some avg10=28.41 avg60=13.92 avg300=15.43 total=4251833348\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
	if avg, total, ok := parseCPUPressure(in); !ok || avg != 28.41 || total != 4251833348 {
		t.Errorf("parseCPUPressure = %v, %v, %v", avg, total, ok)
	}
	for _, bad := range []string{"", "full avg10=1.00 avg60=0 avg300=0 total=1\n", "some avg60=1.00 avg10=1 avg300=0 total=1\n", "some avg10=x avg60=0 avg300=0 total=1\n", "some avg10=1 avg60=0 avg300=0 total=-1\n"} {
		if _, _, ok := parseCPUPressure(bad); ok {
			t.Errorf("parseCPUPressure(%q) ok", bad)
		}
	}
}

// The reader gives the share of the time since its last reading from the
// stall total; first, after a gap of more than 10 s or after a reset, the
// kernel's 10-s average.
func TestPressureReader(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cpu")
	t0 := time.Unix(1_700_000_000, 0)
	now := t0
	r := &pressureReader{path: path, now: func() time.Time { return now }}
	write := func(avg10 float64, total uint64) {
		t.Helper()
		s := fmt.Sprintf("some avg10=%.2f avg60=0.00 avg300=0.00 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", avg10, total)
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i, step := range []struct {
		after time.Duration
		avg10 float64
		total uint64
		want  float64
	}{
		{0, 12, 1_000_000, 12},                    // first: the average
		{time.Second, 12, 1_600_000, 60},          // 0.6 s stalled of 1 s
		{2 * time.Second, 12, 1_700_000, 5},       // 0.1 s of 2 s
		{20 * time.Second, 7, 1_800_000, 7},       // a long gap: the average
		{time.Second, 7, 100, 7},                  // a reset total: the average
		{500 * time.Millisecond, 7, 500_100, 100}, // more than the interval: at most 100
	} {
		now = now.Add(step.after)
		write(step.avg10, step.total)
		if got, ok := r.read(); !ok || got != step.want {
			t.Errorf("reading %d: %v, %v; want %v", i, got, ok, step.want)
		}
	}
	r.path = filepath.Join(t.TempDir(), "missing")
	if _, ok := r.read(); ok {
		t.Error("a missing file read as a pressure")
	}
	if v, ok := NewCPUPressure()(); ok && (v < 0 || v > 100) {
		t.Errorf("this machine's CPU pressure reads %v", v)
	}
}

// Through the wrapper: a throttled answer and a call held by the
// operator's ceiling are pushback; quick answers are not.
func TestWrapperReportsPushback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	p := &stubProvider{}
	c, _ := instrument(t, p, Options{Clock: clk})
	i, _ := c.InstancesV2()
	for range 3 {
		_, _ = i.InstanceExists(ctx, &corev1.Node{})
	}
	if c.Pushback() {
		t.Fatal("quick answers reported as pushback")
	}
	p.err = fmt.Errorf("%w: %w", cloudproviderapi.NewRetryError("throttled", 0), cloud.ErrThrottled)
	_, _ = i.InstanceExists(ctx, &corev1.Node{})
	if !c.Pushback() {
		t.Fatal("a throttled answer is not pushback")
	}
	clk.Step(pushbackMemory + time.Second)
	if c.Pushback() {
		t.Fatal("pushback remembered past pushbackMemory")
	}

	// A ceiling of 1 call/s with a burst of 1: the second call waits.
	clk2 := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	c2, _ := instrument(t, &stubProvider{}, Options{Clock: clk2, QPS: 1, Burst: 1})
	i2, _ := c2.InstancesV2()
	_, _ = i2.InstanceExists(ctx, &corev1.Node{})
	if c2.Pushback() {
		t.Fatal("a call within the burst reported as pushback")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = i2.InstanceExists(ctx, &corev1.Node{})
	}()
	waitForWaiter(t, clk2)
	if !c2.Pushback() {
		t.Fatal("a call held by the ceiling is not pushback")
	}
	clk2.Step(time.Second)
	<-done
}
