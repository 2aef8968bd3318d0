package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// TestConcurrentWriters has writers of every kind race each other and a
// quota (terminations free some of it as they go), then checks what the
// store promises under its lock: the quota held, no name or address handed
// out twice, every acknowledged write there after a restart. Run with -race, it also checks the locking.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	const (
		writers = 6
		each    = 10
		limit   = writers * each / 2 // half the creates must fail on the quota
	)
	dir := t.TempDir()
	s, err := Open(dir, DefaultPools())
	if err != nil {
		t.Fatal(err)
	}
	backend := mustInstance(t, s, inst("backend"))
	lb := mustLB(t, s, lbReq("shared", backend.ID))

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		created  int
		quotaErr int
	)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				name := fmt.Sprintf("w%d-%d", w, i)
				out, err := s.CreateInstances([]api.CreateInstanceRequest{{Name: name, External: i%3 == 0}}, limit, now)
				var ae *api.Error
				switch {
				case errors.As(err, &ae) && ae.Code == api.CodeQuotaExceeded:
					mu.Lock()
					quotaErr++
					mu.Unlock()
					continue
				case err != nil:
					t.Errorf("create %s: %v", name, err)
					return
				}
				mu.Lock()
				created++
				mu.Unlock()
				id := out[0].ID
				writeAround(t, s, w, i, id, lb.ID)
			}
		})
	}
	// Readers run beside the writers: every read takes the same lock.
	done := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, _, err := s.ListInstances(InstanceFilter{}, "", 0); err != nil {
				t.Error(err)
			}
			s.SnapshotInstances(nil)
			s.ListRoutes("c1")
			s.AllLBs()
		}
	})
	wg.Wait()
	close(done)
	readers.Wait()
	if t.Failed() {
		return
	}

	before := snapshot(t, s)
	if created+quotaErr != writers*each || quotaErr == 0 || before.LiveInstances > limit {
		t.Fatalf("%d created, %d refused on the quota of %d, %d live", created, quotaErr, limit, before.LiveInstances)
	}
	checkUnique(t, before)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, DefaultPools())
	equal(t, snapshot(t, s), before)
}

// writeAround changes the instance id and the shared load balancer, and
// adds and removes a route, as a writer of each kind would.
func writeAround(t *testing.T, s *Store, w, i int, id, lbID string) {
	route := fmt.Sprintf("r%d-%d", w, i)
	if _, err := s.CreateRoute("c1", api.CreateRouteRequest{
		Name: route, DestinationCIDR: fmt.Sprintf("10.%d.%d.0/24", w, i), InstanceID: id,
	}, quota, now, ""); err != nil {
		t.Errorf("create route %s: %v", route, err)
	}
	if i%2 == 0 {
		if err := s.DeleteRoute("c1", route); err != nil {
			t.Errorf("delete route %s: %v", route, err)
		}
	}
	if i%3 == 0 {
		if _, err := s.DetachExternalAddress(id); err != nil {
			t.Errorf("detach %s: %v", id, err)
		}
	} else if _, err := s.AttachExternalAddress(id); err != nil {
		t.Errorf("attach %s: %v", id, err)
	}
	if _, err := s.UpdateLB(lbID, lbReq("shared", id).LoadBalancerSpec, now, ""); err != nil {
		t.Errorf("update load balancer: %v", err)
	}
	if _, err := s.SetLBError(lbID, fmt.Sprintf("writer %d", w)); err != nil {
		t.Errorf("set load balancer error: %v", err)
	}
	switch i % 4 {
	case 1:
		_, err := s.SetInstanceState(id, api.InstanceStopped)
		if err != nil {
			t.Errorf("stop %s: %v", id, err)
		}
	case 3:
		// A terminated instance frees its quota for another writer.
		_, err := s.SetInstanceState(id, api.InstanceTerminated)
		if err != nil {
			t.Errorf("terminate %s: %v", id, err)
		}
	}
}

// checkUnique fails unless every live instance has a name and addresses
// of its own, and the indexes count what the records say.
func checkUnique(t *testing.T, st state) {
	t.Helper()
	names, addrs := map[string]bool{}, map[string]string{}
	live := 0
	for _, inst := range st.Instances {
		if inst.State == api.InstanceTerminated {
			continue
		}
		live++
		if names[inst.Name] {
			t.Errorf("two live instances named %s", inst.Name)
		}
		names[inst.Name] = true
		for _, a := range []string{inst.Addresses.Internal, inst.Addresses.External} {
			if a == "" {
				continue
			}
			if other, dup := addrs[a]; dup {
				t.Errorf("%s holds %s, as %s does", inst.Name, a, other)
			}
			addrs[a] = inst.Name
		}
	}
	if live != st.LiveInstances || live != len(st.InstByName) || len(addrs) != len(st.Used[0])+len(st.Used[1]) {
		t.Errorf("%d live instances with %d addresses; indexes say %d live, %d names, %d addresses",
			live, len(addrs), st.LiveInstances, len(st.InstByName), len(st.Used[0])+len(st.Used[1]))
	}
}
