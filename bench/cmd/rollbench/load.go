package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

const (
	// dialTimeout is short, as in the e2e spec's client: a SYN the data
	// plane drops is retransmitted after a second, and an answer that
	// late is a disruption a user would notice.
	dialTimeout = 2 * time.Second
	// requestTimeout is the e2e spec's client timeout.
	requestTimeout = 5 * time.Second
	// slowAnswer marks an answer that succeeded only after a retransmitted
	// SYN or a stall: counted apart from failures.
	slowAnswer = time.Second
	// maxFailureTimes bounds the failure times a load keeps.
	maxFailureTimes = 50
)

// greetingPrefix starts the demo's greeting.
const greetingPrefix = "hello from pod "

// answer is one request's outcome.
type answer struct {
	start, end time.Time
	pod        string
	bare       bool
	err        error
}

// request is one HTTP GET on a new connection to addr; the answer names
// the pod that served it.
func request(ctx context.Context, addr string) answer {
	a := answer{start: time.Now()}
	defer func() { a.end = time.Now() }()
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	c, err := (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		a.err = fmt.Errorf("dial: %w", err)
		a.end = time.Now()
		return a
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(a.start.Add(requestTimeout))
	if _, err := io.WriteString(c, "GET / HTTP/1.0\r\n\r\n"); err != nil {
		a.err = fmt.Errorf("write: %w", err)
		a.end = time.Now()
		return a
	}
	body, err := io.ReadAll(bufio.NewReader(c))
	a.end = time.Now()
	if err != nil {
		a.err = fmt.Errorf("read: %w", err)
		return a
	}
	a.pod, a.bare, a.err = parseAnswer(string(body))
	return a
}

// parseAnswer checks an HTTP answer of the demo and returns the pod its
// greeting names ("hello from pod P on node N").
//
// A bare greeting, without HTTP, is an answer too: the demo waits 300 ms
// for a request line and, when none has come (a loaded machine can delay
// the client that long between connecting and writing), answers with the
// greeting alone. The pod served the connection; bare tells it apart.
func parseAnswer(resp string) (pod string, bare bool, err error) {
	if strings.HasPrefix(resp, greetingPrefix) {
		pod, err := parseGreeting(resp)
		return pod, true, err
	}
	pod, err = parseHTTPAnswer(resp)
	return pod, false, err
}

func parseHTTPAnswer(resp string) (string, error) {
	head, body, ok := strings.Cut(resp, "\r\n\r\n")
	status, _, _ := strings.Cut(head, "\r\n")
	if !strings.HasPrefix(status, "HTTP/1.1 200 ") && !strings.HasPrefix(status, "HTTP/1.0 200 ") {
		if status == "" {
			return "", errors.New("empty answer")
		}
		return "", fmt.Errorf("status %q", status)
	}
	if !ok {
		return "", errors.New("answer without a body")
	}
	return parseGreeting(body)
}

// parseGreeting returns the pod a demo greeting names.
func parseGreeting(body string) (string, error) {
	const prefix = greetingPrefix
	i := strings.Index(body, prefix)
	if i < 0 {
		return "", fmt.Errorf("not a greeting: %q", truncate(body, 60))
	}
	f := strings.Fields(body[i+len(prefix):])
	if len(f) < 3 || f[1] != "on" || f[2] != "node" {
		return "", fmt.Errorf("not a greeting: %q", truncate(body, 60))
	}
	return f[0], nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// errKind names an error by its cause, without addresses and ports, so
// that failures count by cause.
func errKind(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		if strings.HasPrefix(err.Error(), "dial:") {
			return "dial timeout"
		}
		return "read timeout"
	case strings.Contains(err.Error(), "connection refused"):
		return "connection refused"
	case strings.Contains(err.Error(), "connection reset"):
		return "connection reset"
	case strings.Contains(err.Error(), "no route to host"):
		return "no route to host"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return truncate(s, 60)
}

// load is a client sending requests at a steady rate, each on a new
// connection and in its own goroutine, so that one slow answer delays no
// other request.
type load struct {
	mu               sync.Mutex
	sent, slow, bare int
	failures         map[string]int
	first            map[string]time.Time
	// failedAt is when the first failures' requests started, to tell
	// when in a rolling update they happened.
	failedAt []failure
}

// failure is when a failed request started, and its cause.
type failure struct {
	at   time.Time
	kind string
}

func newLoad() *load {
	return &load{failures: map[string]int{}, first: map[string]time.Time{}}
}

// run sends rate requests a second to addr until ctx ends, then waits for
// those in flight.
func (l *load) run(ctx context.Context, addr string, rate float64) {
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// The request's own context: stopping the load lets those in
		// flight finish rather than count as failures.
		wg.Go(func() { l.record(request(context.WithoutCancel(ctx), addr)) })
	}
}

func (l *load) record(a answer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent++
	if a.err != nil {
		kind := errKind(a.err)
		l.failures[kind]++
		if len(l.failedAt) < maxFailureTimes {
			l.failedAt = append(l.failedAt, failure{at: a.start, kind: kind})
		}
		return
	}
	if a.end.Sub(a.start) > slowAnswer {
		l.slow++
	}
	if a.bare {
		l.bare++
	}
	// The request's start, not its end: the connection was sent to the
	// pod when it was set up.
	if f, ok := l.first[a.pod]; !ok || a.start.Before(f) {
		l.first[a.pod] = a.start
	}
}

// loadSummary is what a load saw.
type loadSummary struct {
	sent, failed, slow, bare int
	failures                 map[string]int
	// first is, per pod, the start of the first request it answered.
	first    map[string]time.Time
	failedAt []failure
}

func (l *load) summary() loadSummary {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := loadSummary{sent: l.sent, slow: l.slow, bare: l.bare, failures: map[string]int{}, first: map[string]time.Time{},
		failedAt: append([]failure(nil), l.failedAt...)}
	for k, v := range l.failures {
		s.failures[k] = v
		s.failed += v
	}
	for k, v := range l.first {
		s.first[k] = v
	}
	return s
}
