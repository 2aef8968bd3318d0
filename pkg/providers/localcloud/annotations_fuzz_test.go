package localcloud

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// FuzzServiceAnnotations feeds arbitrary annotation values to the parsers
// the provider runs on every Service: they must never panic, every error
// must name an annotation of this provider, and accepted values must be
// within the documented bounds (timeouts no longer than the interval).
func FuzzServiceAnnotations(f *testing.F) {
	f.Add("5s", "2s", "2", "3", "30s", "VIP", "")
	f.Add("100ms", "", "", "", "", "Proxy", "x")
	f.Add("1s", "2s", "0", "101", "-1s", "Direct", "y")
	f.Add("1h1ns", "1ns", "1e3", " 1", "9223372036854775807ns", "vip", "")
	f.Fuzz(func(t *testing.T, interval, timeout, healthy, unhealthy, udp, mode, typo string) {
		svc := &corev1.Service{}
		svc.Annotations = map[string]string{}
		for k, v := range map[string]string{
			AnnotationHealthCheckInterval: interval, AnnotationHealthCheckTimeout: timeout,
			AnnotationHealthyThreshold: healthy, AnnotationUnhealthyThreshold: unhealthy,
			AnnotationUDPIdleTimeout: udp, AnnotationIPMode: mode, AnnotationPrefix + typo: "1",
		} {
			if v != "" {
				svc.Annotations[k] = v
			}
		}
		named := func(err error) {
			if !strings.Contains(err.Error(), "annotation "+AnnotationPrefix) {
				t.Fatalf("error names no annotation: %v", err)
			}
		}
		if hc, err := healthCheckFrom(svc, 0); err != nil {
			named(err)
		} else {
			eff := hc.WithDefaults()
			if eff.IntervalMs < 1 || eff.IntervalMs > 3600_000 || eff.TimeoutMs < 1 || eff.TimeoutMs > eff.IntervalMs {
				t.Fatalf("health check out of bounds accepted: %+v", eff)
			}
			for _, n := range []int{eff.HealthyThreshold, eff.UnhealthyThreshold} {
				if n < 1 || n > 100 {
					t.Fatalf("threshold out of bounds accepted: %+v", eff)
				}
			}
		}
		if ms, err := durationMs(svc, AnnotationUDPIdleTimeout); err != nil {
			named(err)
		} else if ms < 0 || ms > 3600_000 {
			t.Fatalf("udp idle timeout %dms accepted", ms)
		}
		if m, err := ipModeFrom(svc); err != nil {
			named(err)
		} else if m != corev1.LoadBalancerIPModeVIP && m != corev1.LoadBalancerIPModeProxy {
			t.Fatalf("ip mode %q accepted", m)
		}
		unknown, _ := (&loadBalancers{}).UnknownAnnotations(svc)
		for _, k := range unknown {
			if _, known := map[string]bool{AnnotationHealthCheckInterval: true, AnnotationHealthCheckTimeout: true,
				AnnotationHealthyThreshold: true, AnnotationUnhealthyThreshold: true, AnnotationUDPIdleTimeout: true,
				AnnotationIPMode: true}[k]; known || !strings.HasPrefix(k, AnnotationPrefix) {
				t.Fatalf("%s reported unknown", k)
			}
		}
		if _, typoKnown := svc.Annotations[AnnotationPrefix+typo]; typoKnown && len(unknown) == 0 &&
			!slices.Contains(knownAnnotations, AnnotationPrefix+typo) {
			t.Fatalf("misspelt %s not reported", AnnotationPrefix+typo)
		}
	})
}
