package server_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

func TestInstanceLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	inst, err := e.c.CreateInstance(e.ctx, api.CreateInstanceRequest{
		Name: "node-1", Zone: "zone-a", Region: "region-1", Type: "small",
		Tags: map[string]string{"pool": "blue"}, External: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(inst.ID, "i-") || inst.State != api.InstanceRunning || inst.Addresses.Hostname != "node-1" {
		t.Fatalf("unexpected instance %+v", inst)
	}
	if !e.cfg.Pools.Internal.Contains(parse(t, inst.Addresses.Internal)) || inst.Addresses.External == "" {
		t.Fatalf("addresses %+v not from the pools", inst.Addresses)
	}
	got, err := e.c.GetInstance(e.ctx, inst.ID)
	if err != nil || got.Name != "node-1" {
		t.Fatalf("get: %v %+v", err, got)
	}
	if _, err := e.c.StopInstance(e.ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.c.GetInstance(e.ctx, inst.ID); got.State != api.InstanceStopped {
		t.Fatalf("state after stop = %s", got.State)
	}
	if _, err := e.c.StartInstance(e.ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.DeleteInstance(e.ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	got, _ = e.c.GetInstance(e.ctx, inst.ID)
	if got.State != api.InstanceTerminated {
		t.Fatalf("state after delete = %s", got.State)
	}
	if _, err := e.c.StartInstance(e.ctx, inst.ID); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("start terminated: want ErrConflict, got %v", err)
	}
	list, err := e.c.ListAllInstances(e.ctx, client.ListOptions{})
	if err != nil || len(list) != 0 {
		t.Fatalf("terminated instance listed: %v %+v", err, list)
	}
	// The name is free again once its holder is terminated.
	e.instance("node-1")
}

func TestInstanceListPaginationAndFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	var reqs []api.CreateInstanceRequest
	for i := range 25 {
		tags := map[string]string{"parity": fmt.Sprint(i % 2)}
		reqs = append(reqs, api.CreateInstanceRequest{Name: fmt.Sprintf("n-%02d", i), Zone: "z", Region: "r", Type: "t", Tags: tags})
	}
	created, err := e.c.BatchCreateInstances(e.ctx, reqs)
	if err != nil || len(created) != 25 {
		t.Fatalf("batch: %v (%d)", err, len(created))
	}
	seen := map[string]bool{}
	opts := client.ListOptions{MaxResults: 10}
	pages := 0
	for {
		page, err := e.c.ListInstances(e.ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, it := range page.Items {
			if seen[it.ID] {
				t.Fatalf("instance %s on two pages", it.ID)
			}
			seen[it.ID] = true
		}
		if page.NextPageToken == "" {
			break
		}
		opts.PageToken = page.NextPageToken
	}
	if len(seen) != 25 || pages != 3 {
		t.Fatalf("saw %d instances in %d pages, want 25 in 3", len(seen), pages)
	}
	odd, _ := e.c.ListAllInstances(e.ctx, client.ListOptions{Tags: map[string]string{"parity": "1"}})
	if len(odd) != 12 {
		t.Fatalf("tag filter: got %d, want 12", len(odd))
	}
	byName, _ := e.c.ListAllInstances(e.ctx, client.ListOptions{Name: "n-07"})
	if len(byName) != 1 || byName[0].Name != "n-07" {
		t.Fatalf("name filter: %+v", byName)
	}
	if s := e.stats(); s.Count("ListInstances") != 5 || s.Count("BatchCreateInstances") != 1 {
		t.Fatalf("counters: %+v", s.Operations)
	}
}

func TestInstanceBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.instance("taken")
	cases := []struct {
		name, method, path, body string
		code                     int
		field                    string
	}{
		{"malformed", "POST", "/v1/instances", `{"name":`, 400, "body"},
		{"unknown field", "POST", "/v1/instances", `{"name":"a","zone":"z","region":"r","type":"t","color":"red"}`, 400, "color"},
		{"wrong type", "POST", "/v1/instances", `{"name":5}`, 400, "name"},
		{"empty body", "POST", "/v1/instances", ``, 400, "body"},
		{"trailing data", "POST", "/v1/instances", `{"name":"a","zone":"z","region":"r","type":"t"} {}`, 400, "body"},
		{"bad name", "POST", "/v1/instances", `{"name":"Bad_Name","zone":"z","region":"r","type":"t"}`, 400, "name"},
		{"missing zone", "POST", "/v1/instances", `{"name":"a","region":"r","type":"t"}`, 400, "zone"},
		{"duplicate name", "POST", "/v1/instances", `{"name":"taken","zone":"z","region":"r","type":"t"}`, 409, "name"},
		{"bad id", "GET", "/v1/instances/nope", ``, 400, "id"},
		{"unknown id", "GET", "/v1/instances/i-0000000000000000", ``, 404, "id"},
		{"bad page size", "GET", "/v1/instances?maxResults=5000", ``, 400, "maxResults"},
		{"bad page token", "GET", "/v1/instances?pageToken=!!!", ``, 400, "pageToken"},
		{"bad state", "GET", "/v1/instances?state=melted", ``, 400, "state"},
		{"bad tag", "GET", "/v1/instances?tag=novalue", ``, 400, "tag"},
		{"batch item invalid", "POST", "/v1/instances:batchCreate", `{"instances":[{"name":"ok","zone":"z","region":"r","type":"t"},{"name":"","zone":"z","region":"r","type":"t"}]}`, 400, "instances[1].name"},
		{"batch duplicate", "POST", "/v1/instances:batchCreate", `{"instances":[{"name":"d","zone":"z","region":"r","type":"t"},{"name":"d","zone":"z","region":"r","type":"t"}]}`, 409, "instances[1].name"},
		{"unknown path", "GET", "/v1/volumes", ``, 404, "path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := e.raw(tc.method, tc.path, tc.body)
			if code != tc.code || body.Field != tc.field {
				t.Fatalf("got %d %+v, want %d field %q", code, body, tc.code, tc.field)
			}
			if body.Message == "" || body.Code == "" {
				t.Fatalf("error body incomplete: %+v", body)
			}
		})
	}
	// Nothing was half-written: only the one valid instance exists.
	all, _ := e.c.ListAllInstances(e.ctx, client.ListOptions{})
	if len(all) != 1 {
		t.Fatalf("bad requests left %d instances, want 1", len(all))
	}
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, tok := range []string{"", "Bearer wrong", "Basic abc"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.srv.URL()+"/v1/instances", nil)
		if tok != "" {
			req.Header.Set("Authorization", tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: status %d", tok, resp.StatusCode)
		}
	}
	c, _ := client.New(e.srv.URL(), "wrong")
	if _, err := c.ListInstances(e.ctx, client.ListOptions{}); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("want ErrUnauthorized, got %v", err)
	}
}

func TestInstanceQuotaAndConcurrency(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(k *api.Knobs) { k.Quotas.Instances = 20 })
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, quota := 0, 0
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.c.CreateInstance(e.ctx, api.CreateInstanceRequest{Name: fmt.Sprintf("c-%d", i), Zone: "z", Region: "r", Type: "t"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, client.ErrQuotaExceeded):
				quota++
			default:
				t.Errorf("create: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 20 || quota != 10 {
		t.Fatalf("created %d, quota errors %d; want 20 and 10", ok, quota)
	}
	all, _ := e.c.ListAllInstances(e.ctx, client.ListOptions{})
	addrs := map[string]bool{}
	for _, in := range all {
		if addrs[in.Addresses.Internal] {
			t.Fatalf("address %s given twice", in.Addresses.Internal)
		}
		addrs[in.Addresses.Internal] = true
	}
}

// TestEveryCallChecksItsPathFirst pins the order in which every resource
// call checks its input, the same for all since they share one path: the
// path's id or names first, then the body, then the store.
func TestEveryCallChecksItsPathFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const bad = `{"color":"red"}`
	// Each call: request line, body, and the answer as "status field".
	for _, tc := range [][3]string{
		{"GET /v1/instances/lb-0000000000000000", "", "400 id"},
		{"DELETE /v1/instances/x", "", "400 id"},
		{"POST /v1/instances/x/stop", "", "400 id"},
		{"POST /v1/instances/x/start", "", "400 id"},
		{"DELETE /v1/instances/i-0000000000000000", "", "404 id"},
		{"DELETE /v1/instances/x/externalAddress", "", "400 id"},
		{"GET /v1/loadbalancers/i-0000000000000000", "", "400 id"},
		{"PUT /v1/loadbalancers/x", bad, "400 id"},
		{"PUT /v1/loadbalancers/lb-0000000000000000", bad, "400 color"},
		{"PUT /v1/loadbalancers/lb-0000000000000000", `{"listeners":[]}`, "400 listeners"},
		{"DELETE /v1/loadbalancers/x", "", "400 id"},
		{"DELETE /v1/loadbalancers/lb-0000000000000000", "", "404 id"},
		{"POST /v1/loadbalancers", bad, "400 color"},
		{"GET /v1/loadbalancers?maxResults=0", "", "400 maxResults"},
		{"GET /v1/loadbalancers?tag=x", "", "400 tag"},
		{"GET /v1/routetables/Bad_Cluster/routes", "", "400 cluster"},
		{"POST /v1/routetables/Bad_Cluster/routes", bad, "400 cluster"},
		{"POST /v1/routetables/c1/routes", bad, "400 color"},
		{"DELETE /v1/routetables/Bad_Cluster/routes/Bad_Name", "", "400 cluster"},
		{"DELETE /v1/routetables/c1/routes/Bad_Name", "", "400 name"},
		{"DELETE /v1/routetables/c1/routes/r1", "", "404 name"},
		{"POST /v1/instances:batchCreate", bad, "400 color"},
	} {
		method, path, _ := strings.Cut(tc[0], " ")
		code, body := e.raw(method, path, tc[1])
		if got := fmt.Sprintf("%d %s", code, body.Field); got != tc[2] || body.Message == "" {
			t.Errorf("%s: got %s (%q), want %s", tc[0], got, body.Message, tc[2])
		}
	}
}

// TestAnswerCodes pins the status of each kind of successful call.
func TestAnswerCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	a := e.instance("a")
	for _, tc := range []struct {
		method, path, body string
		code               int
	}{
		{"GET", "/v1/instances/" + a.ID, "", 200},
		{"POST", "/v1/instances/" + a.ID + "/stop", "", 200},
		{"POST", "/v1/routetables/c1/routes", `{"name":"r1","destinationCIDR":"10.244.0.0/24","instanceId":"` + a.ID + `"}`, 201},
		{"GET", "/v1/routetables/c1/routes", "", 200},
		{"DELETE", "/v1/routetables/c1/routes/r1", "", 204},
		{"GET", "/v1/loadbalancers?cluster=c1", "", 200},
		{"DELETE", "/v1/instances/" + a.ID, "", 200},
	} {
		if code, body := e.raw(tc.method, tc.path, tc.body); code != tc.code {
			t.Errorf("%s %s: got %d %+v, want %d", tc.method, tc.path, code, body, tc.code)
		}
	}
}
