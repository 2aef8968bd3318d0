package service

import (
	"sync"
)

// failedSet holds the Service keys whose last sync failed with an error
// (not a retry the cloud asked for): those whose outcome Failed.
type failedSet struct {
	mu   sync.Mutex
	keys map[key]struct{}
}

func (f *failedSet) set(k key, failed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !failed {
		delete(f.keys, k)
		return
	}
	if f.keys == nil {
		f.keys = map[key]struct{}{}
	}
	f.keys[k] = struct{}{}
}

func (f *failedSet) all() []key {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]key, 0, len(f.keys))
	for k := range f.keys {
		out = append(out, k)
	}
	return out
}

// retryFailed queues every Service whose last sync failed, now: the cloud
// has answered again after an outage, and the backoff those Services
// accumulated while it was down (minutes, at the cap) no longer protects
// anything. The queue's workers and the cloud call pacing still bound how
// fast they go. It is called on a cloud call's goroutine and only adds to
// the queue, which does not block.
func (c *Controller) retryFailed() {
	c.queue.Add(c.failed.all()...)
}
