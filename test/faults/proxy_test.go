package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// listProxy stands between the Stratus replicas and localcloud and, when
// told to, leaves instances out of the instance list's answers: what a
// provider bug, a paginated list cut short or an eventually consistent
// cloud API (AWS' DescribeInstances is documented as one) returns. Every
// other request, and the per-instance reads in particular, pass unchanged:
// the cloud still knows the instances.
type listProxy struct {
	url    string
	mu     sync.Mutex
	hidden map[string]bool // instance ids the list leaves out
	served int             // list answers from which instances were left out
}

func startListProxy(t *testing.T, target string) *listProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &listProxy{hidden: map[string]bool{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = p.filter
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// hide leaves the instances out of every list answer until reveal.
func (p *listProxy) hide(ids ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		p.hidden[id] = true
	}
}

func (p *listProxy) reveal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hidden = map[string]bool{}
}

// shortLists returns how many list answers left instances out.
func (p *listProxy) shortLists() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

func (p *listProxy) filter(resp *http.Response) error {
	r := resp.Request
	if r.Method != http.MethodGet || r.URL.Path != api.Version+"/instances" || resp.StatusCode != http.StatusOK {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.hidden) == 0 {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return fmt.Errorf("list proxy: read the list answer: %w", err)
	}
	var list api.InstanceList
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("list proxy: decode the list answer: %w", err)
	}
	n := len(list.Items)
	list.Items = slices.DeleteFunc(list.Items, func(i api.Instance) bool { return p.hidden[i.ID] })
	if len(list.Items) != n {
		p.served++
	}
	if body, err = json.Marshal(list); err != nil {
		return fmt.Errorf("list proxy: encode the list answer: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Del("Content-Encoding")
	return nil
}
