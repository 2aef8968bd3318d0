package conformance

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

func errorChecks() []check {
	return []check{{
		name: "ThrottlingIsARetryError",
		why:  "Stratus paces its calls and requeues work after the delay a RetryError (k8s.io/cloud-provider/api) carries anywhere in the error chain; a throttled call reported as a plain error is retried on the controllers' own backoff, which keeps hammering a cloud that asked for calm.",
		needs: func(s *suite) string {
			switch {
			case s.cfg.Throttle == nil:
				return "Config.Throttle is nil (no way to make the cloud throttle)"
			case s.instances == nil || len(s.cfg.Instances) == 0:
				if s.lb == nil {
					return "neither Config.Instances nor a LoadBalancer to call while throttled"
				}
			}
			return ""
		},
		test: testThrottling,
	}}
}

// testThrottling calls the cloud while it throttles until a call fails,
// and requires that failure to carry a RetryError.
func testThrottling(ctx context.Context, s *suite) error {
	undo := s.cfg.Throttle()
	defer undo()
	call := func(ctx context.Context) error {
		_, _, err := s.lb.GetLoadBalancer(ctx, s.cfg.ClusterName, s.cfg.Service)
		return err
	}
	if s.instances != nil && len(s.cfg.Instances) > 0 {
		call = func(ctx context.Context) error {
			_, err := s.instances.InstanceMetadata(ctx, s.cfg.Instances[0])
			return err
		}
	}
	for range 200 {
		err := call(ctx)
		if err == nil {
			continue
		}
		if _, ok := cloud.RetryAfter(err); !ok {
			return fmt.Errorf("a throttled call failed with %q (%w), which has no RetryError in its chain", err.Error(), err)
		}
		return nil
	}
	return errors.New("200 calls succeeded while the cloud was throttling: Config.Throttle had no effect")
}
