package componentmetrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stratus-ccm/stratus/internal/version"
)

// TestInstallClientGo: a real client-go request to a real listener lands
// in component-base's series on the installed registry, and a request
// counter the registry already held (controller-runtime's) is the one
// counted. A second install changes nothing.
func TestInstallClientGo(t *testing.T) {
	reg := prometheus.NewRegistry()
	existing := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRequests, Help: "Number of HTTP requests, partitioned by status code, method, and host."}, []string{"code", "method", "host"})
	reg.MustRegister(existing)
	if err := InstallClientGo(reg); err != nil {
		t.Fatal(err)
	}
	if err := InstallClientGo(prometheus.NewRegistry()); err != nil {
		t.Fatalf("second install: %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"NamespaceList","apiVersion":"v1","items":[]}`))
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().List(context.Background(), metavOptions()); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if got := testutil.ToFloat64(existing.WithLabelValues("200", "GET", host)); got != 1 {
		t.Errorf("%s{code=200,method=GET} = %v, want 1", MetricRequests, got)
	}
	for _, name := range []string{MetricRequestDuration, MetricRateLimiterDuration, MetricResponseSize, MetricRequestSize} {
		n, err := testutil.GatherAndCount(reg, name)
		if err != nil || n != 1 {
			t.Errorf("%s: %d series (%v), want 1 (verb GET, host %s)", name, n, err, host)
		}
	}
	want := `
# HELP rest_client_request_duration_seconds [ALPHA] Request latency in seconds. Broken down by verb, and host.
# TYPE rest_client_request_duration_seconds histogram
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want+durationSeries(t, reg, host)), MetricRequestDuration); err != nil {
		t.Error(err)
	}
}

// durationSeries renders the one duration histogram with component-base's
// bucket bounds and the count of one request; the observed latency
// itself is left as gathered.
func durationSeries(t *testing.T, g prometheus.Gatherer, host string) string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if mf.GetName() != MetricRequestDuration {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		wantBounds := latencyBuckets()
		for i, bk := range h.GetBucket() {
			if bk.GetUpperBound() != wantBounds[i] {
				t.Errorf("bucket %d bound %v, want component-base's %v", i, bk.GetUpperBound(), wantBounds[i])
			}
			b.WriteString(MetricRequestDuration + `_bucket{host="` + host + `",verb="GET",le="` + formatFloat(bk.GetUpperBound()) + `"} ` + formatFloat(float64(bk.GetCumulativeCount())) + "\n")
		}
		b.WriteString(MetricRequestDuration + `_bucket{host="` + host + `",verb="GET",le="+Inf"} 1` + "\n")
		b.WriteString(MetricRequestDuration + `_sum{host="` + host + `",verb="GET"} ` + formatFloat(h.GetSampleSum()) + "\n")
		b.WriteString(MetricRequestDuration + `_count{host="` + host + `",verb="GET"} 1` + "\n")
	}
	return b.String()
}

func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := RegisterBuildInfo(reg); err != nil {
		t.Fatal(err)
	}
	if err := RegisterBuildInfo(reg); err != nil {
		t.Fatalf("registering again on the same registry: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != MetricBuildInfo {
		t.Fatalf("gathered %v, %v", mfs, err)
	}
	labels := map[string]string{}
	for _, l := range mfs[0].GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	info := version.Get()
	for _, k := range []string{"major", "minor", "git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler", "platform"} {
		if _, ok := labels[k]; !ok {
			t.Errorf("no label %s (component-base's label set)", k)
		}
	}
	if labels["git_version"] != info.Version || labels["go_version"] != info.GoVersion || labels["platform"] != info.Platform {
		t.Errorf("labels %v do not describe this build %+v", labels, info)
	}
	if got := buildInfoLabels(t, "v1.23.4-rc.1"); got[0] != "1" || got[1] != "23" {
		t.Errorf("major, minor of v1.23.4-rc.1 = %q", got)
	}
}

func buildInfoLabels(t *testing.T, v string) [2]string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(buildInfo(version.Info{Version: v}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out [2]string
	for _, l := range mfs[0].GetMetric()[0].GetLabel() {
		switch l.GetName() {
		case "major":
			out[0] = l.GetValue()
		case "minor":
			out[1] = l.GetValue()
		}
	}
	return out
}

func metavOptions() metav1.ListOptions { return metav1.ListOptions{} }

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
