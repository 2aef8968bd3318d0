package localcloud_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stratus-ccm/stratus/internal/cloudwrap"
	"github.com/stratus-ccm/stratus/pkg/cloud"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcprovider "github.com/stratus-ccm/stratus/pkg/providers/localcloud"
)

// Every request the provider's client sends, retries of 429 answers
// included, goes through the CCM's pacing (cloud.RequestPacer), and every
// 429 reaches it and slows the requests down.
func TestThrottledAnswersReachPacing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Millisecond)
	for i := range 3 {
		e.instance(t, fmt.Sprintf("thr-%d", i))
	}
	if _, err := e.admin.UpdateConfig(e.ctx, api.KnobsPatch{RateLimit: ptr(5.0), RateBurst: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("url: %s\ntoken: %s\nmaxRetries: 3\n", e.srv.URL(), e.srv.Token())
	p, err := lcprovider.New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	c, err := cloudwrap.Instrument(p, cloudwrap.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.admin.ResetStats(e.ctx); err != nil {
		t.Fatal(err)
	}
	in, _ := c.InstancesV2()
	errs := make(chan error, 6)
	for i := range 6 {
		go func() {
			_, err := in.InstanceMetadata(e.ctx, node(fmt.Sprintf("thr-%d", i%3), ""))
			errs <- err
		}()
	}
	for range 6 {
		// A call may fail once its retries are spent, and then as throttled.
		if err := <-errs; err != nil && !errors.Is(err, cloud.ErrThrottled) {
			t.Errorf("call failed other than throttled: %v", err)
		}
	}
	st, err := e.admin.Stats(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var answered429, answered float64
	for _, s := range st.Operations {
		answered429 += float64(s.ByCode["429"])
		for _, n := range s.ByCode {
			answered += float64(n)
		}
	}
	if answered429 == 0 {
		t.Fatal("the cloud throttled nothing: the test exercises nothing")
	}
	got, err := testutil.GatherAndCount(reg, cloudwrap.MetricThrottledTotal)
	if err != nil || got == 0 {
		t.Fatalf("%s not exported: %d series, %v", cloudwrap.MetricThrottledTotal, got, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var throttled, rate, paced float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case cloudwrap.MetricThrottledTotal:
				throttled += m.GetCounter().GetValue()
			case cloudwrap.MetricPacingRate:
				rate = m.GetGauge().GetValue()
			case cloudwrap.MetricLimiterWait:
				paced += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	if paced != answered || answered <= 6 {
		t.Errorf("%v requests went through the pacing, the cloud answered %v (6 calls and their retries)", paced, answered)
	}
	if throttled != answered429 {
		t.Errorf("%s = %v, the cloud answered %v 429s", cloudwrap.MetricThrottledTotal, throttled, answered429)
	}
	if rate <= 0 {
		t.Errorf("%s = %v after throttled answers, want a limit", cloudwrap.MetricPacingRate, rate)
	}
}
