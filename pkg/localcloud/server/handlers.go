package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
)

// Instances and routes: each call is the store call it makes, behind the
// shared endpoint plumbing (see endpoint.go).

func (s *Server) createInstance() endpoint {
	return withBody(http.StatusCreated, func(req *api.CreateInstanceRequest) error { return req.Validate("") },
		func(req api.CreateInstanceRequest) (api.Instance, error) {
			out, err := s.store.CreateInstances([]api.CreateInstanceRequest{req}, s.knobs.get().Quotas.Instances, time.Now())
			if err != nil {
				return api.Instance{}, err
			}
			return out[0], nil
		})
}

func (s *Server) batchCreateInstances() endpoint {
	return withBody(http.StatusCreated, (*api.BatchCreateInstancesRequest).Validate,
		func(req api.BatchCreateInstancesRequest) (api.InstanceList, error) {
			out, err := s.store.CreateInstances(req.Instances, s.knobs.get().Quotas.Instances, time.Now())
			return api.InstanceList{Items: out}, err
		})
}

func (s *Server) listInstances() endpoint {
	return listing(instanceFilter, s.store.ListInstances, func(items []api.Instance, next string) any {
		return api.InstanceList{Items: items, NextPageToken: next}
	})
}

func instanceFilter(q url.Values, tags map[string]string) (store.InstanceFilter, error) {
	f := store.InstanceFilter{Name: q.Get("name"), Tags: tags}
	switch st := api.InstanceState(q.Get("state")); st {
	case "", api.InstanceRunning, api.InstanceStopped, api.InstanceTerminated:
		f.State = st
	default:
		return f, api.Invalid("state", fmt.Sprintf("%q is not running, stopped or terminated", st))
	}
	return f, nil
}

// setInstanceState moves an instance to state; load balancers using it
// must then stop (or resume) sending to it.
func (s *Server) setInstanceState(state api.InstanceState) endpoint {
	return func(r *http.Request) (int, any, error) {
		return onID("i", http.StatusOK, func(id string) (api.Instance, error) {
			inst, err := s.store.SetInstanceState(id, state)
			if err == nil {
				s.refreshLBsWithBackend(r.Context(), id)
				// A terminated instance's routes are blackholes.
				s.routesChanged()
			}
			return inst, err
		})(r)
	}
}

func (s *Server) listRoutes(r *http.Request) (int, any, error) {
	p, err := pathNames(r, "cluster")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, api.RouteList{Items: s.store.ListRoutes(p[0])}, nil
}

func (s *Server) createRoute(r *http.Request) (int, any, error) {
	p, err := pathNames(r, "cluster")
	if err != nil {
		return 0, nil, err
	}
	req, err := readBody(r, (*api.CreateRouteRequest).Validate)
	if err != nil {
		return 0, nil, err
	}
	rt, err := s.store.CreateRoute(p[0], req, s.knobs.get().Quotas.RoutesPerCluster, time.Now(), caller(r))
	if err == nil {
		s.routesChanged()
	}
	return answer(http.StatusCreated, rt, err)
}

func (s *Server) deleteRoute(r *http.Request) (int, any, error) {
	p, err := pathNames(r, "cluster", "name")
	if err != nil {
		return 0, nil, err
	}
	if err := s.store.DeleteRoute(p[0], p[1]); err != nil {
		return 0, nil, err
	}
	s.routesChanged()
	return http.StatusNoContent, nil, nil
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
