package observe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/stratus-ccm/stratus/internal/controllerctx"
)

// DryRun returns a wrapper for rest.Config.Wrap that makes every write a
// server-side dry run (?dryRun=All): the API server admits, validates and
// defaults it and answers with the object as it would be, and stores
// nothing. Writes that would change an object are recorded in rec with the
// diff between the object before and the dry run's answer; writes that
// would change nothing (a patch that is already true) are not. Events are
// dry-run too but not recorded: they describe, they do not change.
//
// The config the wrapper is used with should ask for JSON, so that the
// objects can be compared.
func DryRun(rec *Recorder) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return &dryRunTransport{next: next, rec: rec}
	}
}

type dryRunTransport struct {
	next http.RoundTripper
	rec  *Recorder
}

// reviews are "create" calls that write nothing (authentication and
// authorization questions); the API server refuses dry runs of some.
var reviews = map[string]bool{
	"tokenreviews": true, "subjectaccessreviews": true, "selfsubjectaccessreviews": true,
	"localsubjectaccessreviews": true, "selfsubjectreviews": true, "selfsubjectrulesreviews": true,
}

func (t *dryRunTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return t.next.RoundTrip(req)
	}
	p := parsePath(req.URL.Path)
	// A TokenRequest stores nothing either, and a dry run issues no token.
	if reviews[p.resource] || (p.resource == "serviceaccounts" && p.subresource == "token") {
		return t.next.RoundTrip(req)
	}
	var before map[string]any
	var readErr error
	if p.name != "" && req.Method != http.MethodPost {
		before, readErr = t.get(req, p)
	}
	dry, err := dryRunRequest(req)
	if err != nil {
		return nil, err
	}
	resp, err := t.next.RoundTrip(dry)
	if err != nil || resp.StatusCode >= 300 || p.resource == "events" {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return resp, nil // the caller reads the body and sees the same short read
	}
	var after map[string]any
	_ = json.Unmarshal(body, &after)
	if c, ok := t.change(req, p, before, readErr, after); ok {
		t.rec.Record(req.Context(), c)
	}
	return resp, nil
}

// dryRunRequest copies req as a dry run: the dryRun query parameter, and
// for a DELETE with a body (DeleteOptions, which the API server then reads
// instead of the query) the dryRun field of that body.
func dryRunRequest(req *http.Request) (*http.Request, error) {
	dry := req.Clone(req.Context())
	q := dry.URL.Query()
	q.Set("dryRun", "All")
	dry.URL.RawQuery = q.Encode()
	if req.Method != http.MethodDelete || req.Body == nil || req.Body == http.NoBody {
		return dry, nil
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("observe: read delete options: %w", err)
	}
	var opts map[string]any
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &opts); err != nil {
			return nil, fmt.Errorf("observe: delete options are not JSON, cannot make the delete a dry run: %w", err)
		}
	}
	if opts == nil {
		opts = map[string]any{}
	}
	opts["dryRun"] = []string{"All"}
	if body, err = json.Marshal(opts); err != nil {
		return nil, fmt.Errorf("observe: delete options: %w", err)
	}
	dry.Body = io.NopCloser(bytes.NewReader(body))
	dry.ContentLength = int64(len(body))
	dry.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return dry, nil
}

// change describes what the write would do; false when it would change
// nothing.
func (t *dryRunTransport) change(req *http.Request, p apiPath, before map[string]any, readErr error, after map[string]any) (Change, bool) {
	c := Change{Controller: writer(req), Kind: p.resource, Object: p.object()}
	if p.subresource != "" {
		c.Kind += "/" + p.subresource
	}
	switch req.Method {
	case http.MethodPost:
		c.Action = ActionCreate
		if name := nestedString(after, "metadata", "name"); name != "" {
			c.Object = p.join(name)
		}
		c.Diff = "new object"
	case http.MethodDelete:
		c.Action = ActionDelete
		c.Diff = "object deleted"
		if p.name == "" {
			c.Diff = "collection deleted: " + req.URL.RawQuery
		}
	default:
		c.Action = ActionUpdate
		if readErr != nil {
			// The write would succeed, but what it changes cannot be told.
			c.Diff = "unknown: " + readErr.Error()
			return c, true
		}
		lines := Diff(before, after)
		if len(lines) == 0 {
			return c, false
		}
		c.Diff = strings.Join(lines, "; ")
	}
	return c, true
}

// get reads the object the write is about, with the write's credentials.
// A write to a subresource (status) reads the object itself: the same
// object, and controllers may update a status they are not allowed to get.
// A least-privilege writer may patch what it may not get (the chart grants
// the node controllers "patch" on Nodes, their reads come from the shared
// cache): a patch the GET is refused for reads the object with an empty
// dry-run patch to the same URL, which the writer is allowed and which
// answers the object as it is.
func (t *dryRunTransport) get(req *http.Request, p apiPath) (map[string]any, error) {
	path := req.URL.Path
	if p.subresource != "" {
		path = strings.TrimSuffix(path, "/"+p.subresource)
	}
	out, err := t.read(req, http.MethodGet, path)
	if err == nil || req.Method != http.MethodPatch {
		return out, err
	}
	if out, perr := t.read(req, http.MethodPatch, req.URL.Path); perr == nil {
		return out, nil
	}
	return nil, err
}

// read sends a GET, or an empty dry-run merge patch, for path to the API
// server the write was for, with the write's credentials.
func (t *dryRunTransport) read(req *http.Request, method, path string) (map[string]any, error) {
	var body io.Reader
	u := req.URL.Scheme + "://" + req.URL.Host + path
	if method == http.MethodPatch {
		body, u = strings.NewReader("{}"), u+"?dryRun=All"
	}
	g, err := http.NewRequestWithContext(req.Context(), method, u, body) //nolint:gosec // G704: the URL is the client's own API server
	if err != nil {
		return nil, fmt.Errorf("read %s before the write: %w", path, err)
	}
	g.Header = req.Header.Clone()
	g.Header.Del("Content-Type")
	if method == http.MethodPatch {
		g.Header.Set("Content-Type", "application/merge-patch+json")
	}
	g.Header.Set("Accept", "application/json")
	resp, err := t.next.RoundTrip(g)
	if err != nil {
		return nil, fmt.Errorf("read %s before the write: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read %s before the write: %s", path, resp.Status)
	}
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("read %s before the write: %w", path, err)
	}
	return out, nil
}

// apiPath is a parsed Kubernetes API path.
type apiPath struct {
	namespace, resource, name, subresource string
}

// parsePath reads /api/v1/[namespaces/NS/]RES[/NAME[/SUB]] and the /apis
// form with a group.
func parsePath(path string) apiPath {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return apiPath{resource: path}
	}
	var p apiPath
	if len(parts) >= 3 && parts[0] == "namespaces" {
		p.namespace, parts = parts[1], parts[2:]
	} else if len(parts) == 2 && parts[0] == "namespaces" {
		return apiPath{resource: "namespaces", name: parts[1]}
	}
	if len(parts) > 0 {
		p.resource = parts[0]
	}
	if len(parts) > 1 {
		p.name = parts[1]
	}
	if len(parts) > 2 {
		p.subresource = parts[2]
	}
	return p
}

func (p apiPath) join(name string) string {
	if p.namespace == "" {
		return name
	}
	return p.namespace + "/" + name
}

func (p apiPath) object() string { return p.join(p.name) }

// writer names the controller that made req: the one its context carries
// (the client call's context, set where the controller's work starts);
// else the fieldManager the write was made with (every controller writes
// under its own name); else a controller named in the user agent, which a
// client of its own carries. A DELETE has no field manager, and the
// controllers share one client: without the context, UnknownController.
func writer(req *http.Request) string {
	if name := controllerctx.From(req.Context()); name != "" {
		return name
	}
	if name := req.URL.Query().Get("fieldManager"); name != "" {
		return name
	}
	if name := controllerFromUserAgent(req.UserAgent()); name != "" {
		return name
	}
	return UnknownController
}

// controllerFromUserAgent finds a controller name in a user agent such as
// ".../stratus-cloud-controller-manager/service-lb-controller".
func controllerFromUserAgent(ua string) string {
	for _, part := range strings.Split(ua, "/") {
		if strings.HasSuffix(part, "-controller") && !strings.HasSuffix(part, "controller-manager") {
			return part
		}
	}
	return ""
}

func nestedString(m map[string]any, keys ...string) string {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = mm[k]
	}
	s, _ := cur.(string)
	return s
}
