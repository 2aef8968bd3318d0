package server_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcloud/server"
)

func TestRateLimitRetryAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(k *api.Knobs) { k.RateLimit = 2; k.RateBurst = 2 })
	var limited *client.APIError
	for range 5 {
		_, err := e.c.ListInstances(e.ctx, client.ListOptions{})
		if errors.As(err, &limited) {
			break
		}
	}
	if limited == nil || !errors.Is(limited, client.ErrRateLimited) || limited.StatusCode != 429 || limited.RetryAfter <= 0 {
		t.Fatalf("no 429 with Retry-After: %+v", limited)
	}
	// The raw answer carries the standard header in whole seconds.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.srv.URL()+"/v1/instances", nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("status %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// A retrying client gets through by waiting as told.
	rc, _ := client.New(e.srv.URL(), e.token, client.WithMaxRetries(5))
	if _, err := rc.ListInstances(e.ctx, client.ListOptions{}); err != nil {
		t.Fatalf("retrying client: %v", err)
	}
	s := e.stats()
	if s.Operations["ListInstances"].ByCode["429"] < 2 || s.Operations["ListInstances"].ByCode["200"] < 2 {
		t.Fatalf("429s and 200s must both be counted: %+v", s.Operations["ListInstances"])
	}
	// Turning the limit off at runtime takes effect at once.
	off := 0.0
	if _, err := e.c.UpdateConfig(e.ctx, api.KnobsPatch{RateLimit: &off}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := e.c.ListInstances(e.ctx, client.ListOptions{}); err != nil {
			t.Fatalf("after disabling the limit: %v", err)
		}
	}
}

func TestInjectedErrorsAndLatency(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(k *api.Knobs) { k.ErrorRate = 1 })
	_, err := e.c.CreateInstance(e.ctx, api.CreateInstanceRequest{Name: "n", Zone: "z", Region: "r", Type: "t"})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 503 || !errors.Is(err, client.ErrInternal) {
		t.Fatalf("want injected 503, got %v", err)
	}
	zero := 0.0
	lat := api.Duration(150 * time.Millisecond)
	if _, err := e.c.UpdateConfig(e.ctx, api.KnobsPatch{ErrorRate: &zero, Latency: &lat}); err != nil {
		t.Fatal(err)
	}
	all, _ := e.c.ListAllInstances(e.ctx, client.ListOptions{})
	if len(all) != 0 {
		t.Fatalf("an injected fault wrote something: %+v", all)
	}
	start := time.Now()
	e.instance("n")
	if time.Since(start) < 150*time.Millisecond {
		t.Fatalf("latency not applied")
	}
	if got := e.stats().Operations["CreateInstance"].ByCode["503"]; got != 1 {
		t.Fatalf("503 count = %d", got)
	}
	if err := e.c.ResetStats(e.ctx); err != nil {
		t.Fatal(err)
	}
	if s := e.stats(); s.Total != 0 {
		t.Fatalf("after reset: %+v", s)
	}
}

func TestAdminConfigValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, tc := range []struct{ body, field string }{
		{`{"latency":"-1s"}`, "latency"},
		{`{"rateLimit":-1}`, "rateLimit"},
		{`{"errorRate":1.5}`, "errorRate"},
		{`{"quotas":{"routesPerCluster":-3}}`, "quotas.routesPerCluster"},
		{`{"latency":"soon"}`, "latency"},
		{`{"lbProvisioningTime":"1s","bogus":1}`, "bogus"},
	} {
		code, body := e.raw("PUT", "/v1/admin/config", tc.body)
		if code != 400 || body.Field != tc.field {
			t.Errorf("%s: got %d %+v, want field %s", tc.body, code, body, tc.field)
		}
	}
	k, err := e.c.Config(e.ctx)
	if err != nil || k.Quotas.RoutesPerCluster != 50 || k.Latency != 0 {
		t.Fatalf("rejected patches changed the config: %v %+v", err, k)
	}
	get := func() (*http.Response, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.srv.URL()+"/metrics", nil)
		if err != nil {
			return nil, err
		}
		return http.DefaultClient.Do(req)
	}
	resp, err := get()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	e.instance("m")
	resp2, err := get()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp2.Body)
	_ = resp2.Body.Close()
	if !strings.Contains(string(data), `localcloud_api_requests_total{code="201",operation="CreateInstance"} 1`) {
		t.Fatalf("metrics missing counter:\n%s", data)
	}
}

func TestKnobBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, tc := range []struct{ body, field, value string }{
		{`{"rateLimit":1e-300}`, "rateLimit", "1e-300"},
		{`{"rateLimit":1e9}`, "rateLimit", "1e+09"},
		{`{"lbProvisioningTime":"2562047h"}`, "lbProvisioningTime", "2562047h"},
		{`{"lbDeletionTime":"2h"}`, "lbDeletionTime", "2h0m0s"},
		{`{"latency":"2m"}`, "latency", "2m0s"},
		{`{"rateBurst":2000000}`, "rateBurst", "2000000"},
		{`{"quotas":{"instances":1000001}}`, "quotas.instances", "1000001"},
		{`{"quotas":{"loadBalancers":-1}}`, "quotas.loadBalancers", "-1"},
		{`{"rateLimit":5,"rateBurst":0}`, "rateBurst", "0"},
	} {
		code, body := e.raw("PUT", "/v1/admin/config", tc.body)
		if code != 400 || body.Field != tc.field || !strings.Contains(body.Message, tc.value) {
			t.Errorf("%s: got %d %+v, want field %s naming %s", tc.body, code, body, tc.field, tc.value)
		}
		if tc.field != "errorRate" && strings.Contains(body.Message, "errorRate") {
			t.Errorf("%s: message about %s mentions errorRate: %q", tc.body, tc.field, body.Message)
		}
	}
	if k, err := e.c.Config(e.ctx); err != nil || k.RateLimit != 0 || k.LBProvisioningTime != 0 {
		t.Fatalf("refused values were applied: %v %+v", err, k)
	}
	// The bounds themselves are accepted.
	hour, minute, low := api.Duration(time.Hour), api.Duration(time.Minute), api.MinRateLimit
	if _, err := e.c.UpdateConfig(e.ctx, api.KnobsPatch{LBProvisioningTime: &hour, Latency: &minute, RateLimit: &low}); err != nil {
		t.Fatalf("values at the bounds: %v", err)
	}
}

func TestKnobsSurviveRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	rate, lat, q := 0.25, api.Duration(30*time.Millisecond), 7
	if _, err := e.c.UpdateConfig(e.ctx, api.KnobsPatch{ErrorRate: &rate, Latency: &lat, Quotas: &api.QuotasPatch{LoadBalancers: &q}}); err != nil {
		t.Fatal(err)
	}
	// The initial knobs of the config only seed a new cloud: the restarted
	// one keeps what was set at runtime.
	e.restart()
	k, err := e.c.Config(e.ctx)
	if err != nil || k.ErrorRate != rate || k.Latency != lat || k.Quotas.LoadBalancers != q {
		t.Fatalf("after restart: %v %+v", err, k)
	}
	// An override (a flag given explicitly) wins and is kept.
	zero := 0.0
	e.cfg.KnobOverrides = &api.KnobsPatch{ErrorRate: &zero}
	e.restart()
	e.cfg.KnobOverrides = nil
	e.restart()
	k, err = e.c.Config(e.ctx)
	if err != nil || k.ErrorRate != 0 || k.Latency != lat {
		t.Fatalf("after an override and another restart: %v %+v", err, k)
	}
	// An invalid override is refused naming the knob, and nothing starts.
	bad := api.Duration(-time.Second)
	e.cfg.KnobOverrides = &api.KnobsPatch{Latency: &bad}
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := server.New(e.cfg); err == nil || !strings.Contains(err.Error(), "latency") {
		t.Fatalf("invalid override: %v", err)
	}
	e.cfg.KnobOverrides = nil
	e.start()
}
