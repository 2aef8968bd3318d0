package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// Defaults for the retry of rate-limited calls.
const (
	DefaultMaxRetries   = 3
	DefaultMaxRetryWait = 10 * time.Second
	DefaultTimeout      = 30 * time.Second
	// DefaultUserAgent names a client that was given no WithUserAgent.
	DefaultUserAgent = "localcloud-client"
)

// Client talks to one localcloud.
type Client struct {
	base         *url.URL
	token        string
	http         *http.Client
	maxRetries   int
	maxRetryWait time.Duration
	userAgent    string
	// limiter paces every HTTP request, retries included (nil: none).
	limiter *rate.Limiter
	// onThrottle, when set, hears of every 429 answer, retried or not.
	onThrottle atomic.Pointer[func(retryAfter time.Duration)]
	// gate, when set, lets each request go and hears its answer.
	gate atomic.Pointer[RequestGate]
}

// RequestGate is a caller's pacing of the client's requests: it blocks
// until a request may go (or ctx ends), and the returned done hears
// whether the cloud throttled it and the Retry-After it gave.
type RequestGate func(ctx context.Context) (done func(throttled bool, retryAfter time.Duration), err error)

// SetRequestGate makes every HTTP request, the first of a call, each retry
// of a 429 and each further request a call makes, wait for g first and
// report its answer to it, with the context of the call. A caller pacing
// the cloud's requests adaptively thus paces what the cloud counts, and
// the client's own retries cannot burst past it. It may be called while
// the client is in use.
func (c *Client) SetRequestGate(g RequestGate) { c.gate.Store(&g) }

// OnThrottle makes f hear of every 429 answer with its Retry-After,
// including those the client retries itself, so that a caller pacing its
// calls sees every throttled answer, not only those that exhausted the
// retries. It may be called while the client is in use.
func (c *Client) OnThrottle(f func(retryAfter time.Duration)) { c.onThrottle.Store(&f) }

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient replaces the HTTP client (default: 30s timeout).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithUserAgent sets the User-Agent of every request. localcloud records it
// on what a call creates or changes (a load balancer's updatedBy, a
// route's createdBy), so it should name the program and, where several
// run, which one.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithMaxRetries bounds how often a 429 answer is retried; 0 disables retries.
func WithMaxRetries(n int) Option { return func(c *Client) { c.maxRetries = max(0, n) } }

// WithMaxRetryWait caps the wait before one retry, whatever Retry-After says.
func WithMaxRetryWait(d time.Duration) Option { return func(c *Client) { c.maxRetryWait = d } }

// WithRateLimit paces the client's HTTP requests, retries included, to qps
// with the given burst, as cloud SDKs do: a caller that makes several
// requests per logical operation then stays under the cloud's own limit
// instead of collecting 429s. qps <= 0 disables pacing.
func WithRateLimit(qps float64, burst int) Option {
	return func(c *Client) {
		if qps > 0 {
			c.limiter = rate.NewLimiter(rate.Limit(qps), max(1, burst))
		}
	}
}

// New returns a client for the API at baseURL (e.g. http://127.0.0.1:8787)
// authenticating with token.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("localcloud client: URL %q must be http(s)://host:port", baseURL)
	}
	if token == "" {
		return nil, errors.New("localcloud client: token is empty")
	}
	c := &Client{
		base: u, token: token, http: &http.Client{Timeout: DefaultTimeout},
		maxRetries: DefaultMaxRetries, maxRetryWait: DefaultMaxRetryWait, userAgent: DefaultUserAgent,
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// do sends one API call, retrying 429 answers, and decodes the answer into
// out (when non-nil).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = b
	}
	u := *c.base
	u.Path += api.Version + path
	u.RawQuery = query.Encode()
	for attempt := 0; ; attempt++ {
		if c.limiter != nil {
			if err := c.limiter.Wait(ctx); err != nil {
				return fmt.Errorf("%s %s: waiting for the client rate limit: %w", method, path, err)
			}
		}
		var done func(bool, time.Duration)
		if g := c.gate.Load(); g != nil && *g != nil {
			d, err := (*g)(ctx)
			if err != nil {
				return fmt.Errorf("%s %s: waiting for the caller's pacing: %w", method, path, err)
			}
			done = d
		}
		err := c.once(ctx, method, u.String(), body, out)
		wait, limited := RetryAfter(err)
		if done != nil {
			done(limited, wait)
		}
		if f := c.onThrottle.Load(); limited && f != nil {
			(*f)(wait)
		}
		if !limited || attempt >= c.maxRetries {
			return err
		}
		wait = min(max(wait, 10*time.Millisecond), c.maxRetryWait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up waiting to retry: %w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

func (c *Client) once(ctx context.Context, method, u string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if st, ok := out.(streamed); ok && resp.StatusCode < 300 {
		if err := st.decodeStream(json.NewDecoder(io.LimitReader(resp.Body, maxStreamedAnswer))); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		return decodeError(resp, data)
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

// Bounds on the size of an answer: one read whole, and one decoded as it
// arrives (a page of load balancers with thousands of backends each).
const (
	maxAnswer         = 64 << 20
	maxStreamedAnswer = 1 << 30
)

// streamed is an answer decoded item by item as it arrives instead of read
// whole first, so that a large listing never sits in memory at once.
type streamed interface {
	decodeStream(dec *json.Decoder) error
}

func decodeError(resp *http.Response, data []byte) error {
	e := &APIError{StatusCode: resp.StatusCode}
	var body api.ErrorResponse
	if err := json.Unmarshal(data, &body); err == nil && body.Error.Code != "" {
		e.Code, e.Field, e.Message = body.Error.Code, body.Error.Field, body.Error.Message
	} else {
		e.Code = codeForStatus(resp.StatusCode)
		e.Message = strings.TrimSpace(string(data))
	}
	if e.Code == api.CodeRateLimited {
		e.RetryAfter = retryAfter(resp.Header)
	}
	return e
}

func codeForStatus(code int) api.ErrorCode {
	switch code {
	case http.StatusNotFound:
		return api.CodeNotFound
	case http.StatusBadRequest, http.StatusMethodNotAllowed:
		return api.CodeInvalidArgument
	case http.StatusConflict:
		return api.CodeConflict
	case http.StatusUnauthorized:
		return api.CodeUnauthorized
	case http.StatusTooManyRequests:
		return api.CodeRateLimited
	case http.StatusForbidden:
		return api.CodeQuotaExceeded
	}
	return api.CodeInternal
}

// retryAfter prefers the millisecond header localcloud adds, then the
// standard Retry-After in seconds, then one second.
func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.Atoi(h.Get("X-Retry-After-Ms")); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	return time.Second
}
