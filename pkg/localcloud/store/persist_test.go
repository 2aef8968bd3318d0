package store

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// state is everything a Store holds, as its reads give it, and the
// indexes a restart must rebuild to the same effect.
type state struct {
	Instances     []api.Instance
	LBs           []api.LoadBalancer
	Routes        map[string][]api.Route
	Knobs         api.Knobs
	InstByName    map[string]string
	LiveInstances int
	LBByName      map[string]string
	Used          [3]map[string]bool // internal, external, VIP
}

func snapshot(t *testing.T, s *Store) state {
	t.Helper()
	_, insts := s.SnapshotInstances(nil)
	lbs, next, err := s.ListLBs(LBFilter{}, "", api.MaxPageSize)
	if err != nil || next != "" {
		t.Fatalf("list load balancers: %q %v", next, err)
	}
	k, _, err := s.Knobs()
	if err != nil {
		t.Fatal(err)
	}
	st := state{Instances: insts, LBs: lbs, Routes: map[string][]api.Route{}, Knobs: k}
	for cluster := range s.routeTables {
		st.Routes[cluster] = s.ListRoutes(cluster)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	st.InstByName, st.LiveInstances, st.LBByName = s.instByName, s.liveInstances, s.lbByName
	for i, a := range []*allocator{s.internal, s.external, s.vips} {
		st.Used[i] = map[string]bool{}
		for addr := range a.used {
			st.Used[i][addr.String()] = true
		}
	}
	return st
}

// populate puts records of every kind and state in s.
func populate(t *testing.T, s *Store) {
	t.Helper()
	out, err := s.CreateInstances([]api.CreateInstanceRequest{inst("a"), inst("b"), inst("c"), {Name: "d", External: true}}, quota, now)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c, d := out[0], out[1], out[2], out[3]
	for id, st := range map[string]api.InstanceState{b.ID: api.InstanceStopped, c.ID: api.InstanceTerminated} {
		if _, err := s.SetInstanceState(id, st); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AttachExternalAddress(a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DetachExternalAddress(d.ID); err != nil {
		t.Fatal(err)
	}
	mustLB(t, s, lbReq("provisioning", a.ID))
	active := mustLB(t, s, lbReq("active", a.ID, b.ID))
	if _, err := s.SetLBStatus(active.ID, api.LBActive, now); err != nil {
		t.Fatal(err)
	}
	failed := mustLB(t, s, lbReq("failed"))
	if _, err := s.SetLBError(failed.ID, "cannot bind 10.0.0.1:80"); err != nil {
		t.Fatal(err)
	}
	deleting := mustLB(t, s, lbReq("deleting", b.ID))
	if _, err := s.SetLBStatus(deleting.ID, api.LBDeleting, now); err != nil {
		t.Fatal(err)
	}
	for i, cluster := range []string{"c1", "c1", "c2"} {
		r := api.CreateRouteRequest{Name: "r" + string(rune('0'+i)), DestinationCIDR: "10.244." + string(rune('0'+i)) + ".0/24", InstanceID: a.ID}
		if _, err := s.CreateRoute(cluster, r, quota, now, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateRoute("c1", api.CreateRouteRequest{Name: "gone", DestinationCIDR: "10.245.0.0/24", InstanceID: b.ID}, quota, now, ""); err != nil {
		t.Fatal(err)
	}
	k := api.DefaultKnobs()
	k.Quotas.LoadBalancers = 17
	if err := s.SaveKnobs(k); err != nil {
		t.Fatal(err)
	}
}

func TestRestartReloadsEverything(t *testing.T) {
	t.Parallel()
	file, before := populated(t)
	s := open(t, filepath.Dir(file), DefaultPools())
	equal(t, snapshot(t, s), before)

	// The reloaded pools and names are in use: nothing is handed out twice.
	n, err := s.CreateInstances([]api.CreateInstanceRequest{{Name: "e", External: true}}, quota, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, old := range before.Instances {
		if old.State != api.InstanceTerminated && (old.Addresses.Internal == n[0].Addresses.Internal ||
			old.Addresses.External == n[0].Addresses.External) {
			t.Fatalf("%+v got an address %s holds: %+v", n[0].Addresses, old.Name, old.Addresses)
		}
	}
	_, err = s.CreateInstances([]api.CreateInstanceRequest{inst("a")}, quota, now)
	wantCode(t, err, api.CodeConflict, "name")
	_, err = s.CreateLB(lbReq("active"), quota, now, now, "")
	wantCode(t, err, api.CodeConflict, "name")
}

// populated returns the state file of a populated store, closed, and
// what the store held.
func populated(t *testing.T) (string, state) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, DefaultPools())
	if err != nil {
		t.Fatal(err)
	}
	populate(t, s)
	st := snapshot(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, FileName), st
}

// reopen opens a copy of the state file changed by corrupt. It fails the
// test unless Open either refuses with an error naming the file, leaving
// the file as it was, or loads what the store held: never a panic, never
// a half-loaded store.
func reopen(t *testing.T, file string, want state, corrupt func([]byte) []byte) error {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data = corrupt(bytes.Clone(data))
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, DefaultPools())
	if err == nil {
		defer func() { _ = s.Close() }()
		equal(t, snapshot(t, s), want)
		return nil
	}
	if !strings.Contains(err.Error(), path) {
		t.Fatalf("the error does not name the file %s: %v", path, err)
	}
	after, rerr := os.ReadFile(path)
	if rerr != nil || !bytes.Equal(after, data) {
		t.Fatalf("a failed open changed the file (%v)", rerr)
	}
	return err
}

func TestCorruptRecord(t *testing.T) {
	t.Parallel()
	file, want := populated(t)
	edit := func(f func(tx *bolt.Tx) error) {
		t.Helper()
		db, err := bolt.Open(file, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(f); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	same := func(b []byte) []byte { return b }

	edit(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("loadbalancers")).Put([]byte("lb-bad"), []byte(`{"id":"lb-bad",`))
	})
	err := reopen(t, file, want, same)
	if err == nil || !strings.Contains(err.Error(), "loadbalancers/lb-bad") {
		t.Fatalf("a truncated record: %v, want an error naming it", err)
	}

	// A record under another record's key would hide one of them.
	edit(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("loadbalancers"))
		_ = b.Delete([]byte("lb-bad"))
		rec, _ := json.Marshal(want.LBs[0])
		return tx.Bucket([]byte("loadbalancers")).Put([]byte("lb-0000000000000000"), rec)
	})
	if err := reopen(t, file, want, same); err == nil || !strings.Contains(err.Error(), "loadbalancers/lb-0000000000000000") {
		t.Fatalf("a record under the wrong key: %v, want an error naming it", err)
	}

	// Nothing good was lost: without the bad record, all of it loads.
	edit(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("loadbalancers")).Delete([]byte("lb-0000000000000000"))
	})
	if err := reopen(t, file, want, same); err != nil {
		t.Fatalf("the repaired file: %v", err)
	}

	edit(func(tx *bolt.Tx) error { return tx.Bucket([]byte("config")).Put([]byte("knobs"), []byte("[")) })
	s := open(t, filepath.Dir(file), DefaultPools())
	if _, _, err := s.Knobs(); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("corrupt knobs: %v, want an error naming the file", err)
	}
}

func TestTruncatedFile(t *testing.T) {
	t.Parallel()
	file, want := populated(t)
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	size := int(info.Size())
	for _, n := range []int{1, 100, page, 2*page - 1, 2*page + 1, 3 * page, size / 2, size - page, size - 1} {
		if n <= 0 || n >= size {
			continue
		}
		err := reopen(t, file, want, func(b []byte) []byte { return b[:n] })
		t.Logf("truncated to %d of %d bytes: %v", n, size, err)
	}
}

func TestGarbledFile(t *testing.T) {
	t.Parallel()
	file, want := populated(t)
	page := os.Getpagesize()
	rng := rand.New(rand.NewPCG(1, 2))
	garble := func(b []byte) {
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
	}
	if err := reopen(t, file, want, func(b []byte) []byte { garble(b); return b }); err == nil {
		t.Fatal("a file of noise opened")
	}
	if err := reopen(t, file, want, func(b []byte) []byte { garble(b[:2*page]); return b }); err == nil {
		t.Fatal("a file with both meta pages garbled opened")
	}
	// Every other page garbled in turn, whole or in part: an error or the
	// store whole, never a panic.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for p := 2; p*page < len(data); p++ {
		for _, n := range []int{16, page} {
			err := reopen(t, file, want, func(b []byte) []byte { garble(b[p*page : p*page+n]); return b })
			t.Logf("page %d, %d bytes garbled: %v", p, n, err)
		}
	}
}
