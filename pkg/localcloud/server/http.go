package server

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

const maxBody = 8 << 20

// statusRecorder remembers the status code for the request counter.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	handle := func(pattern, op string, e endpoint) {
		mux.Handle(pattern, s.apiCall(op, serve(e)))
	}
	v := api1
	handle("GET "+v+"/instances", "ListInstances", s.listInstances())
	handle("POST "+v+"/instances", "CreateInstance", s.createInstance())
	handle("POST "+v+"/instances:batchCreate", "BatchCreateInstances", s.batchCreateInstances())
	handle("GET "+v+"/instances/{id}", "GetInstance", onID("i", http.StatusOK, s.store.GetInstance))
	handle("DELETE "+v+"/instances/{id}", "DeleteInstance", s.setInstanceState(api.InstanceTerminated))
	handle("POST "+v+"/instances/{id}/stop", "StopInstance", s.setInstanceState(api.InstanceStopped))
	handle("POST "+v+"/instances/{id}/start", "StartInstance", s.setInstanceState(api.InstanceRunning))
	// The external address calls answer with the whole instance, so that a
	// caller learns the allocated address without another call. Load
	// balancers need no update: they forward to internal addresses.
	handle("POST "+v+"/instances/{id}/externalAddress", "AttachExternalAddress", onID("i", http.StatusOK, s.store.AttachExternalAddress))
	handle("DELETE "+v+"/instances/{id}/externalAddress", "DetachExternalAddress", onID("i", http.StatusOK, s.store.DetachExternalAddress))
	handle("GET "+v+"/loadbalancers", "ListLoadBalancers", s.listLBs())
	handle("POST "+v+"/loadbalancers", "CreateLoadBalancer", s.createLB)
	handle("GET "+v+"/loadbalancers/{id}", "GetLoadBalancer", onID("lb", http.StatusOK, s.store.GetLB))
	handle("PUT "+v+"/loadbalancers/{id}", "UpdateLoadBalancer", s.updateLB)
	handle("DELETE "+v+"/loadbalancers/{id}", "DeleteLoadBalancer", onID("lb", http.StatusAccepted, s.deleteLB))
	handle("GET "+v+"/routetables/{cluster}/routes", "ListRoutes", s.listRoutes)
	handle("POST "+v+"/routetables/{cluster}/routes", "CreateRoute", s.createRoute)
	handle("DELETE "+v+"/routetables/{cluster}/routes/{name}", "DeleteRoute", s.deleteRoute)

	// Admin calls are authenticated but neither counted nor subject to the
	// knobs: a test must be able to read counters and turn faults off even
	// while the API is answering 429s and 503s.
	mux.Handle("GET "+v+"/admin/stats", s.admin(s.getStats))
	mux.Handle("DELETE "+v+"/admin/stats", s.admin(s.resetStats))
	mux.Handle("GET "+v+"/admin/instances:watch", s.admin(s.watchInstances))
	mux.Handle("GET "+v+"/admin/config", s.admin(s.getConfig))
	mux.Handle("PUT "+v+"/admin/config", s.admin(s.putConfig))
	mux.Handle("PATCH "+v+"/admin/config", s.admin(s.putConfig))
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.stats.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, api.NotFound("path", fmt.Sprintf("no API at %s %s", r.Method, r.URL.Path)))
	})
	return mux
}

const api1 = api.Version

func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) == 1
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="localcloud"`)
	writeError(w, &api.Error{Code: api.CodeUnauthorized, Message: "missing or wrong bearer token"})
}

// apiCall wraps a handler with, in order: authentication, the request
// counter (so 429s and injected faults are counted), the rate limit, the
// latency and the fault injection. Faults are decided before the handler
// runs, so an injected error never leaves a half-done write behind.
func (s *Server) apiCall(op string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r) {
			unauthorized(w)
			return
		}
		rec := &statusRecorder{ResponseWriter: w}
		defer func() { s.stats.inc(op, rec.code) }()
		if wait := s.knobs.admit(); wait > 0 {
			rec.Header().Set("Retry-After", retryAfterSeconds(wait))
			// Whole seconds are coarse for tests; the client prefers this.
			rec.Header().Set("X-Retry-After-Ms", strconv.FormatInt(max(1, wait.Milliseconds()), 10))
			writeError(rec, &api.Error{Code: api.CodeRateLimited, Message: "request rate limit exceeded for " + op})
			return
		}
		s.knobs.delay(r.Context())
		if s.knobs.fault() {
			rec.WriteHeader(http.StatusServiceUnavailable)
			writeJSONBody(rec, api.ErrorResponse{Error: api.ErrorBody{Code: api.CodeInternal, Message: "injected fault in " + op}})
			return
		}
		r.Body = http.MaxBytesReader(rec, r.Body, maxBody)
		h(rec, r)
	})
}

func (s *Server) admin(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r) {
			unauthorized(w)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		h(w, r)
	})
}

// decode reads a JSON body strictly: unknown fields, trailing data and
// type mismatches are errors naming the field.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return api.Invalid("body", "unexpected data after the JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var maxErr *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF):
		return api.Invalid("body", "a JSON object is required")
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return api.Invalid(field, fmt.Sprintf("expected %s, got JSON %s", typeErr.Type, typeErr.Value))
	case errors.As(err, &syntaxErr):
		return api.Invalid("body", fmt.Sprintf("malformed JSON at offset %d: %v", syntaxErr.Offset, err))
	case errors.As(err, &maxErr):
		return api.Invalid("body", fmt.Sprintf("larger than %d bytes", maxErr.Limit))
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		f = strings.Trim(f, `"`)
		return api.Invalid(f, "unknown field")
	}
	return api.Invalid("body", "invalid JSON: "+msg)
}

func writeJSONBody(w http.ResponseWriter, v any) {
	_ = json.NewEncoder(w).Encode(v)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	writeJSONBody(w, v)
}

// writeError answers with the JSON error body; errors that are not API
// errors are internal and their text is not exposed.
func writeError(w http.ResponseWriter, err error) {
	var ae *api.Error
	if !errors.As(err, &ae) {
		ae = &api.Error{Code: api.CodeInternal, Message: "internal error"}
	}
	writeJSON(w, ae.Code.HTTPStatus(), api.ErrorResponse{Error: api.ErrorBody{Code: ae.Code, Message: ae.Message, Field: ae.Field}})
}

// fail logs internal errors before answering, since their text is hidden.
func fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *api.Error
	if !errors.As(err, &ae) {
		klog.FromContext(r.Context()).Error(err, "localcloud request failed", "method", r.Method, "path", r.URL.Path)
	}
	writeError(w, err)
}

// pageParams reads pageToken and maxResults.
func pageParams(r *http.Request) (string, int, error) {
	q := r.URL.Query()
	limit := api.DefaultPage
	if v := q.Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > api.MaxPageSize {
			return "", 0, api.Invalid("maxResults", fmt.Sprintf("%q must be an integer from 1 to %d", v, api.MaxPageSize))
		}
		limit = n
	}
	return q.Get("pageToken"), limit, nil
}

// tagParams reads repeated tag=key=value filters.
func tagParams(r *http.Request) (map[string]string, error) {
	var tags map[string]string
	for _, t := range r.URL.Query()["tag"] {
		k, v, ok := strings.Cut(t, "=")
		if !ok || k == "" {
			return nil, api.Invalid("tag", fmt.Sprintf("%q must be key=value", t))
		}
		if tags == nil {
			tags = map[string]string{}
		}
		tags[k] = v
	}
	return tags, nil
}
