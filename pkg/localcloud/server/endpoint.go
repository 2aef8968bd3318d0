package server

import (
	"net/http"
	"net/url"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// endpoint is what differs between the API's calls: it reads the request
// and returns the answer's status and body, or an error. serve does what
// is the same for every call, so that a resource's calls are written as
// what they do, not as HTTP plumbing.
type endpoint func(r *http.Request) (code int, body any, err error)

// serve answers with the endpoint's body as JSON, with no body when it
// has none, or with the API's error body.
func serve(e endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		code, body, err := e(r)
		if err != nil {
			fail(w, r, err)
			return
		}
		if body == nil {
			w.WriteHeader(code)
			return
		}
		writeJSON(w, code, body)
	}
}

// answer turns a result and its error into an endpoint's return.
func answer[T any](code int, out T, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	return code, out, nil
}

// onID serves a call on the resource the path's {id} names: do sees the
// id only once it is an id of the kind prefix gives ("i", "lb"), so that a
// malformed one is a 400 naming it rather than a 404.
func onID[T any](prefix string, code int, do func(id string) (T, error)) endpoint {
	return func(r *http.Request) (int, any, error) {
		id := r.PathValue("id")
		if err := api.ValidID("id", prefix, id); err != nil {
			return 0, nil, err
		}
		out, err := do(id)
		return answer(code, out, err)
	}
}

// withBody serves a call whose JSON body is a Req: do sees it only once
// it decoded strictly and validate accepted it.
func withBody[Req, T any](code int, validate func(*Req) error, do func(req Req) (T, error)) endpoint {
	return func(r *http.Request) (int, any, error) {
		req, err := readBody(r, validate)
		if err != nil {
			return 0, nil, err
		}
		out, err := do(req)
		return answer(code, out, err)
	}
}

func readBody[Req any](r *http.Request, validate func(*Req) error) (Req, error) {
	var req Req
	if err := decode(r, &req); err != nil {
		return req, err
	}
	return req, validate(&req)
}

// listing serves a paged list: the page parameters and tags are read the
// same for every kind, filter reads the rest of the query, and page
// builds the kind's list answer.
func listing[F, T any](
	filter func(q url.Values, tags map[string]string) (F, error),
	list func(f F, token string, limit int) ([]T, string, error),
	page func(items []T, next string) any,
) endpoint {
	return func(r *http.Request) (int, any, error) {
		token, limit, err := pageParams(r)
		if err != nil {
			return 0, nil, err
		}
		tags, err := tagParams(r)
		if err != nil {
			return 0, nil, err
		}
		f, err := filter(r.URL.Query(), tags)
		if err != nil {
			return 0, nil, err
		}
		items, next, err := list(f, token, limit)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, page(items, next), nil
	}
}

// pathNames returns the path values of keys, each checked to be a name.
func pathNames(r *http.Request, keys ...string) ([]string, error) {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = r.PathValue(k)
		if err := api.ValidName(k, out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
