package cloud

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

type statusError struct{ code int }

func (e statusError) Error() string       { return fmt.Sprintf("HTTP %d", e.code) }
func (e statusError) HTTPStatusCode() int { return e.code }

type v1StatusError struct{ code int }

func (e v1StatusError) Error() string   { return fmt.Sprintf("status %d", e.code) }
func (e v1StatusError) StatusCode() int { return e.code }

type faultError struct{ fault bool }

func (e faultError) Error() string    { return "provider's own" }
func (e faultError) CloudFault() bool { return e.fault }

func TestIsCloudFault(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"nil":                    {nil, false},
		"a plain error":          {errors.New(`cannot parse providerID "aws:///us-east-1a/i-1"`), false},
		"instance not found":     {fmt.Errorf("x: %w", cloudprovider.InstanceNotFound), false},
		"not implemented":        {cloudprovider.NotImplemented, false},
		"canceled":               {fmt.Errorf("call: %w", context.Canceled), false},
		"400":                    {fmt.Errorf("ensure: %w", statusError{400}), false},
		"403 (v1 SDK)":           {v1StatusError{403}, false},
		"404":                    {statusError{404}, false},
		"409":                    {statusError{409}, false},
		"408":                    {statusError{408}, true},
		"429":                    {statusError{429}, true},
		"500":                    {fmt.Errorf("ensure: %w", statusError{500}), true},
		"503 (v1 SDK)":           {v1StatusError{503}, true},
		"deadline":               {fmt.Errorf("call: %w", context.DeadlineExceeded), true},
		"connection refused":     {fmt.Errorf("get: %w", refused), true},
		"reset":                  {fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		"url error":              {&url.Error{Op: "Get", URL: "http://cloud", Err: errors.New("EOF")}, true},
		"retry error":            {cloudproviderapi.NewRetryError("busy", time.Second), true},
		"provider says fault":    {fmt.Errorf("x: %w", faultError{true}), true},
		"provider says not":      {fmt.Errorf("x: %w", faultError{false}), false},
		"provider beats status":  {errors.Join(faultError{false}, statusError{503}), false},
		"joined, one is a fault": {errors.Join(errors.New("bad id"), statusError{502}), true},
	} {
		if got := IsCloudFault(tc.err); got != tc.want {
			t.Errorf("%s: IsCloudFault(%v) = %v, want %v", name, tc.err, got, tc.want)
		}
	}
}
