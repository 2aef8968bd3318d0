package harness

import (
	"net/http"
	"testing"
)

func TestParseStatCPUSumsUserSystemAndChildren(t *testing.T) {
	// utime=150 stime=50 cutime=20 cstime=30 ticks; the name holds ") (".
	stat := "1234 (we ird) (name) S 1 1234 1234 0 -1 4194560 100 0 0 0 150 50 20 30 20 0 12 0 100 1000 200"
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if got != 2.5 {
		t.Fatalf("cpu = %v s, want 2.5", got)
	}
}

func TestParseStatusKB(t *testing.T) {
	status := "Name:\tstratus\nVmPeak:\t  900000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t   40000 kB\n"
	got, err := parseStatusKB(status, "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	if got != 50 {
		t.Fatalf("VmHWM = %v MiB, want 50", got)
	}
	if _, err := parseStatusKB(status, "VmSwap"); err == nil {
		t.Fatal("missing field must be an error")
	}
}

func TestOperationOf(t *testing.T) {
	for _, c := range []struct{ method, path, want string }{
		{http.MethodGet, "/v1/loadbalancers", "ListLoadBalancers"},
		{http.MethodGet, "/v1/admin/stats", ""},
		{http.MethodPost, "/v1/instances:batchCreate", "BatchCreateInstances"},
		{http.MethodPut, "/v1/loadbalancers/lb-1", "Other"},
	} {
		if got := operationOf(c.method, c.path); got != c.want {
			t.Errorf("operationOf(%s %s) = %q, want %q", c.method, c.path, got, c.want)
		}
	}
}

func TestSumMetric(t *testing.T) {
	text := `# HELP rest_client_requests_total Number of HTTP requests
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 12
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 3
rest_client_requests_total_other 100
rest_client_request_duration_seconds_count 7
`
	if got := SumMetric(text, "rest_client_requests_total"); got != 15 {
		t.Fatalf("SumMetric = %v, want 15", got)
	}
}

func TestMachineCPU(t *testing.T) {
	a, err := parseMachineCPU("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n")
	if err != nil || a.Busy != 150 || a.Total != 1000 {
		t.Fatalf("first reading = %+v, %v", a, err)
	}
	b, _ := parseMachineCPU("cpu  250 0 100 850 50 0 0 0 0 0\n")
	if got := BusyShare(a, b); got != 0.8 {
		t.Fatalf("busy share = %g, want 0.8 (200 busy ticks of 250)", got)
	}
	if BusyShare(b, b) != 0 {
		t.Fatal("no time passed should be 0")
	}
	if _, err := parseMachineCPU("intr 1 2 3\n"); err == nil {
		t.Fatal("a malformed /proc/stat was accepted")
	}
	if _, err := ReadMachineCPU(); err != nil {
		t.Fatal(err)
	}
}
