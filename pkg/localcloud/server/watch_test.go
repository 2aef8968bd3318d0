package server_test

import (
	"testing"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

func TestWatchInstances(t *testing.T) {
	t.Parallel()
	// Faults and throttling apply to the API, not to the admin view.
	e := newEnv(t, func(k *api.Knobs) { k.ErrorRate = 1 })
	zero := 0.0
	if _, err := e.c.UpdateConfig(e.ctx, api.KnobsPatch{ErrorRate: &zero}); err != nil {
		t.Fatal(err)
	}
	mine, err := e.c.CreateInstance(e.ctx, api.CreateInstanceRequest{Name: "n1", Zone: "z", Region: "r", Type: "t", Tags: map[string]string{api.TagCluster: "c1"}})
	if err != nil {
		t.Fatal(err)
	}
	e.instance("not-mine")
	tags := map[string]string{api.TagCluster: "c1"}
	w, err := e.c.WatchInstances(e.ctx, 0, tags)
	if err != nil || w.Generation == 0 || len(w.Items) != 1 || w.Items[0].ID != mine.ID {
		t.Fatalf("first watch: %v %+v", err, w)
	}
	one := 1.0
	if _, err := e.c.UpdateConfig(e.ctx, api.KnobsPatch{ErrorRate: &one}); err != nil {
		t.Fatal(err)
	}
	got := make(chan *api.InstanceWatch, 1)
	errs := make(chan error, 1)
	go func() {
		next, err := e.c.WatchInstances(e.ctx, w.Generation, tags)
		if err != nil {
			errs <- err
			return
		}
		got <- next
	}()
	// The change wakes the waiting watch; deletion shows as terminated.
	if _, err := e.c.UpdateConfig(e.ctx, api.KnobsPatch{ErrorRate: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.DeleteInstance(e.ctx, mine.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	case next := <-got:
		if next.Generation <= w.Generation || len(next.Items) != 1 || next.Items[0].State != api.InstanceTerminated {
			t.Fatalf("after delete: %+v", next)
		}
	}
	if s := e.stats(); s.Count("WatchInstances") != 0 {
		t.Fatalf("admin watch was counted: %+v", s)
	}
}
