package server

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
)

func (s *Server) createInstance(w http.ResponseWriter, r *http.Request) {
	var req api.CreateInstanceRequest
	if err := decode(r, &req); err != nil {
		fail(w, r, err)
		return
	}
	if err := req.Validate(""); err != nil {
		fail(w, r, err)
		return
	}
	out, err := s.store.CreateInstances([]api.CreateInstanceRequest{req}, s.knobs.get().Quotas.Instances, time.Now())
	if err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, out[0])
}

func (s *Server) batchCreateInstances(w http.ResponseWriter, r *http.Request) {
	var req api.BatchCreateInstancesRequest
	if err := decode(r, &req); err != nil {
		fail(w, r, err)
		return
	}
	if err := req.Validate(); err != nil {
		fail(w, r, err)
		return
	}
	out, err := s.store.CreateInstances(req.Instances, s.knobs.get().Quotas.Instances, time.Now())
	if err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, api.InstanceList{Items: out})
}

func (s *Server) getInstance(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := api.ValidID("id", "i", id); err != nil {
		fail(w, r, err)
		return
	}
	inst, err := s.store.GetInstance(id)
	if err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inst)
}

func (s *Server) listInstances(w http.ResponseWriter, r *http.Request) {
	token, limit, err := pageParams(r)
	if err != nil {
		fail(w, r, err)
		return
	}
	tags, err := tagParams(r)
	if err != nil {
		fail(w, r, err)
		return
	}
	f := store.InstanceFilter{Name: r.URL.Query().Get("name"), Tags: tags}
	switch st := api.InstanceState(r.URL.Query().Get("state")); st {
	case "", api.InstanceRunning, api.InstanceStopped, api.InstanceTerminated:
		f.State = st
	default:
		fail(w, r, api.Invalid("state", fmt.Sprintf("%q is not running, stopped or terminated", st)))
		return
	}
	items, next, err := s.store.ListInstances(f, token, limit)
	if err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.InstanceList{Items: items, NextPageToken: next})
}

func (s *Server) stopInstance(w http.ResponseWriter, r *http.Request) {
	s.setInstanceState(w, r, api.InstanceStopped)
}

func (s *Server) startInstance(w http.ResponseWriter, r *http.Request) {
	s.setInstanceState(w, r, api.InstanceRunning)
}

func (s *Server) deleteInstance(w http.ResponseWriter, r *http.Request) {
	s.setInstanceState(w, r, api.InstanceTerminated)
}

func (s *Server) setInstanceState(w http.ResponseWriter, r *http.Request, state api.InstanceState) {
	id := r.PathValue("id")
	if err := api.ValidID("id", "i", id); err != nil {
		fail(w, r, err)
		return
	}
	inst, err := s.store.SetInstanceState(id, state)
	if err != nil {
		fail(w, r, err)
		return
	}
	// Load balancers using this instance must stop (or resume) sending to it.
	s.refreshLBsWithBackend(r.Context(), id)
	writeJSON(w, http.StatusOK, inst)
}

func (s *Server) attachExternalAddress(w http.ResponseWriter, r *http.Request) {
	s.changeExternalAddress(w, r, s.store.AttachExternalAddress)
}

func (s *Server) detachExternalAddress(w http.ResponseWriter, r *http.Request) {
	s.changeExternalAddress(w, r, s.store.DetachExternalAddress)
}

// changeExternalAddress answers with the whole instance, so that a caller
// learns the allocated address without another call. Load balancers need
// no update: they forward to internal addresses.
func (s *Server) changeExternalAddress(w http.ResponseWriter, r *http.Request, change func(id string) (api.Instance, error)) {
	id := r.PathValue("id")
	if err := api.ValidID("id", "i", id); err != nil {
		fail(w, r, err)
		return
	}
	inst, err := change(id)
	if err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inst)
}

func (s *Server) listRoutes(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	if err := api.ValidName("cluster", cluster); err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.RouteList{Items: s.store.ListRoutes(cluster)})
}

func (s *Server) createRoute(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	if err := api.ValidName("cluster", cluster); err != nil {
		fail(w, r, err)
		return
	}
	var req api.CreateRouteRequest
	if err := decode(r, &req); err != nil {
		fail(w, r, err)
		return
	}
	if err := req.Validate(); err != nil {
		fail(w, r, err)
		return
	}
	rt, err := s.store.CreateRoute(cluster, req, s.knobs.get().Quotas.RoutesPerCluster, time.Now())
	if err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, rt)
}

func (s *Server) deleteRoute(w http.ResponseWriter, r *http.Request) {
	cluster, name := r.PathValue("cluster"), r.PathValue("name")
	if err := api.ValidName("cluster", cluster); err != nil {
		fail(w, r, err)
		return
	}
	if err := api.ValidName("name", name); err != nil {
		fail(w, r, err)
		return
	}
	if err := s.store.DeleteRoute(cluster, name); err != nil {
		fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) getStats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.stats.snapshot())
}

func (s *Server) resetStats(w http.ResponseWriter, _ *http.Request) {
	s.stats.reset()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) getConfig(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.knobs.get())
}

func (s *Server) putConfig(w http.ResponseWriter, r *http.Request) {
	var p api.KnobsPatch
	if err := decode(r, &p); err != nil {
		fail(w, r, err)
		return
	}
	k, err := s.knobs.patch(p, s.store.SaveKnobs)
	if err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, k)
}

// maxWatchWait bounds one long poll of watchInstances.
const maxWatchWait = 20 * time.Second

// watchInstances answers once the instances changed after generation
// `after` (at once when they already have), or after the wait, with every
// instance carrying the tags. It is the view a hypervisor has of its
// machines, for the sandbox's kubelets: an admin call, so neither counted
// nor throttled nor failed by the knobs.
func (s *Server) watchInstances(w http.ResponseWriter, r *http.Request) {
	tags, err := tagParams(r)
	if err != nil {
		fail(w, r, err)
		return
	}
	var after uint64
	if v := r.URL.Query().Get("after"); v != "" {
		if after, err = strconv.ParseUint(v, 10, 64); err != nil {
			fail(w, r, api.Invalid("after", fmt.Sprintf("%q is not a generation", v)))
			return
		}
	}
	wait := time.NewTimer(maxWatchWait)
	defer wait.Stop()
	for {
		gen, changed := s.store.InstanceGeneration()
		if gen > after {
			break
		}
		select {
		case <-changed:
			continue
		case <-wait.C:
		case <-r.Context().Done():
			return
		}
		break
	}
	gen, items := s.store.SnapshotInstances(tags)
	writeJSON(w, http.StatusOK, api.InstanceWatch{Generation: gen, Items: items})
}
