package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		in, pod, err string
		bare         bool
	}{
		{in: "hello from pod roll-endpoints-1 on node real-02\n", pod: "roll-endpoints-1", bare: true},
		{in: "hello from pod \n", err: "not a greeting", bare: true},
		{in: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 44\r\nConnection: close\r\n\r\nhello from pod roll-nodes-7d9f-abcde on node real-01\n", pod: "roll-nodes-7d9f-abcde"},
		{in: "HTTP/1.1 503 Service Unavailable\r\n\r\n", err: `status "HTTP/1.1 503 Service Unavailable"`},
		{in: "", err: "empty answer"},
		{in: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n", err: "answer without a body"},
		{in: "HTTP/1.1 200 OK\r\n\r\n10.250.1.1\n", err: "not a greeting"},
		{in: "HTTP/1.1 200 OK\r\n\r\nhello from pod x\n", err: "not a greeting"},
	} {
		pod, bare, err := parseAnswer(tc.in)
		if bare != tc.bare {
			t.Errorf("parseAnswer(%q): bare %v, want %v", tc.in, bare, tc.bare)
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseAnswer(%q) = %q, %v; want an error with %q", tc.in, pod, err, tc.err)
			}
			continue
		}
		if err != nil || pod != tc.pod {
			t.Errorf("parseAnswer(%q) = %q, %v; want %q", tc.in, pod, err, tc.pod)
		}
	}
}

func TestParseGreetingBare(t *testing.T) {
	pod, err := parseGreeting("hello from pod p-1 on node n\n")
	if err != nil || pod != "p-1" {
		t.Fatalf("parseGreeting = %q, %v", pod, err)
	}
}

func TestParseEnv(t *testing.T) {
	env, err := parseEnv(strings.NewReader("# comment\nexport LOCALCLOUD_URL=\"http://10.250.1.1:18787\"\nexport LOCALCLOUD_TOKEN=\"a\\\"b\"\nPATH=x\nexport BARE=y\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"LOCALCLOUD_URL": "http://10.250.1.1:18787", "LOCALCLOUD_TOKEN": `a"b`, "BARE": "y"}
	if fmt.Sprint(env) != fmt.Sprint(want) {
		t.Errorf("parseEnv = %v, want %v", env, want)
	}
}

func TestPercentile(t *testing.T) {
	v := []time.Duration{5, 1, 4, 2, 3}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 3}, {100, 5}, {0, 1}, {20, 1}, {21, 2}} {
		if got := percentile(v, tc.p); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of nothing is not 0")
	}
	if v[0] != 5 {
		t.Error("percentile sorted its argument")
	}
}

func TestSpread(t *testing.T) {
	if s := spreadOf([]int64{2, 4, 3}).String(); s != "3.0 (2–4)" {
		t.Errorf("spread = %q", s)
	}
	if s := spreadOf([]int64{0, 0}).String(); s != "0.0" {
		t.Errorf("spread = %q", s)
	}
	if s := spreadOf(nil).String(); s != "0.0" {
		t.Errorf("spread = %q", s)
	}
}

func testResults() []modeResult {
	run := func(m mode, sent int, failures map[string]int, writes int64, churn time.Duration, seen ...time.Duration) rolloutResult {
		failed := 0
		for _, v := range failures {
			failed += v
		}
		return rolloutResult{mode: m, rollout: churn / 2, churn: churn,
			calls:    map[string]int64{"UpdateLoadBalancer": writes},
			allCalls: writes + 10,
			load:     loadSummary{sent: sent, failed: failed, failures: failures},
			newPods:  len(seen) + 1, unanswered: 1,
			fromSeen: seen, fromTransition: seen}
	}
	return []modeResult{
		{mode: nodeTargets, runs: []rolloutResult{
			run(nodeTargets, 100, nil, 0, 10*time.Second, 100*time.Millisecond),
			run(nodeTargets, 200, nil, 0, 30*time.Second, 300*time.Millisecond),
		}},
		{mode: endpointTargets, runs: []rolloutResult{
			run(endpointTargets, 100, map[string]int{"connection refused": 2}, 6, 10*time.Second, time.Second, 2*time.Second),
			run(endpointTargets, 200, map[string]int{"dial timeout": 1}, 14, 30*time.Second, 3*time.Second),
		}},
	}
}

func TestAggregate(t *testing.T) {
	a := testResults()[1].aggregate()
	if a.rollouts != 2 || a.sent != 300 || a.failed != 3 || a.failures["connection refused"] != 2 {
		t.Errorf("counts: %+v", a)
	}
	if a.writes.mean != 10 || a.writes.min != 6 || a.writes.max != 14 || a.byOp["UpdateLoadBalancer"] != 20 {
		t.Errorf("writes: %+v %v", a.writes, a.byOp)
	}
	if a.writesPerChurnSecond != 0.5 {
		t.Errorf("writes per second of churn = %v, want 20/40", a.writesPerChurnSecond)
	}
	if a.churn != 20*time.Second || a.rollout != 10*time.Second {
		t.Errorf("durations: %v %v", a.churn, a.rollout)
	}
	if a.seenP50 != 2*time.Second || a.seenMax != 3*time.Second || a.newPods != 5 || a.unanswered != 2 {
		t.Errorf("readiness: %+v", a)
	}
}

func TestPrintTable(t *testing.T) {
	var b strings.Builder
	o := options{nodes: 2, replicas: 6, rollouts: 2, rate: 50, drain: 15 * time.Second, tail: 3 * time.Second}
	printTable(&b, testResults(), o, []string{"bin/rolling-bench", "-bin", "bin"})
	out := b.String()
	for _, want := range []string{
		"`bin/rolling-bench -bin bin`: 2 real nodes",
		"| | node targets | endpoint targets |\n|---|---|---|\n",
		"| requests failed | 0 | 3 (2 connection refused, 1 dial timeout) |\n",
		"| load-balancer writes per rolling update (Create/Update/DeleteLoadBalancer), mean (least–most) | 0.0 | 10.0 (6–14) |\n",
		"| load-balancer writes per second of churn | 0.00 | 0.50 |\n",
		"| new pods (not reached through the VIP) | 4 (2) | 5 (2) |\n",
		"| Ready (seen by a watch) → first request through the VIP answered by the pod, p50 / max (s) | 0.10 / 0.30 | 2.00 / 3.00 |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for i, line := range strings.Split(strings.TrimSpace(out), "\n")[2:] {
		if strings.Count(line, "|") != 4 {
			t.Errorf("row %d has not 3 cells: %q", i, line)
		}
	}
}

func TestErrKind(t *testing.T) {
	timeout := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("dial: %w", timeout), "dial timeout"},
		{fmt.Errorf("read: %w", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}), "read timeout"},
		{errors.New("dial: dial tcp 10.250.1.129:80: connect: connection refused"), "connection refused"},
		{errors.New("read: read tcp 10.250.1.1:4000->10.250.1.129:80: read: connection reset by peer"), "connection reset"},
		{errors.New(`status "HTTP/1.1 503"`), `status "HTTP/1.1 503"`},
	} {
		if got := errKind(tc.err); got != tc.want {
			t.Errorf("errKind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestRolledOut(t *testing.T) {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: new(int32(3))}}
	d.Generation = 2
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 3, AvailableReplicas: 3}
	if rolledOut(d) {
		t.Error("rolled out with an old pod left")
	}
	d.Status.Replicas = 3
	if !rolledOut(d) {
		t.Error("not rolled out")
	}
	d.Status.ObservedGeneration = 1
	if rolledOut(d) {
		t.Error("rolled out before the controller saw the patch")
	}
}

func TestObjects(t *testing.T) {
	o := options{replicas: 6, drain: 15 * time.Second}
	d := deployment(endpointTargets, o)
	ru := d.Spec.Strategy.RollingUpdate
	c := d.Spec.Template.Spec.Containers[0]
	if *d.Spec.Replicas != 6 || ru.MaxSurge.IntValue() != 1 || ru.MaxUnavailable.IntValue() != 0 || d.Spec.MinReadySeconds != 0 {
		t.Errorf("strategy: %+v", d.Spec)
	}
	if c.Lifecycle.PreStop.Sleep.Seconds != 15 || *d.Spec.Template.Spec.TerminationGracePeriodSeconds <= 15 || c.ReadinessProbe.HTTPGet.Port.IntValue() != 8080 {
		t.Errorf("pod: %+v", d.Spec.Template.Spec)
	}
	if s := service(endpointTargets); s.Spec.AllocateLoadBalancerNodePorts == nil || *s.Spec.AllocateLoadBalancerNodePorts {
		t.Error("endpoint targets' Service allocates node ports")
	}
	if s := service(nodeTargets); s.Spec.AllocateLoadBalancerNodePorts != nil || s.Name == service(endpointTargets).Name {
		t.Errorf("node targets' Service: %+v", s.Spec)
	}
	if deployment(nodeTargets, options{replicas: 1}).Spec.Template.Spec.Containers[0].Lifecycle != nil {
		t.Error("a preStop sleep of 0")
	}
}

// TestLoadAgainstServer runs the client against a stand-in demo on
// loopback: every request answered and attributed to its pod.
func TestLoadAgainstServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Read the request first, as the demo does: closing with
			// it unread would reset the connection.
			_, _ = bufio.NewReader(c).ReadString('\n')
			body := "hello from pod p-1 on node n-1\n"
			_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
			_ = c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	l := newLoad()
	l.run(ctx, ln.Addr().String(), 100)
	s := l.summary()
	if s.sent < 10 || s.failed != 0 {
		t.Errorf("sent %d, failed %d %v", s.sent, s.failed, s.failures)
	}
	if _, ok := s.first["p-1"]; !ok || len(s.first) != 1 {
		t.Errorf("first answers: %v", s.first)
	}
}
