package localcloud

import (
	"context"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
)

// nameIndex maps node (instance) names to instance ids. The route API of
// cloudprovider names a route's target by node name only, so without it
// every CreateRoute would cost a lookup call: 1,000 nodes, 1,000 extra
// calls. Instance ids never change, so one list fills the index and a miss
// refreshes it with one list shared by all concurrent callers.
type nameIndex struct {
	client *lcclient.Client
	group  singleflight.Group

	mu  sync.Mutex
	ids map[string]string
}

func newNameIndex(c *lcclient.Client) *nameIndex {
	return &nameIndex{client: c, ids: map[string]string{}}
}

// lookup returns the id of the live instance called name.
func (x *nameIndex) lookup(ctx context.Context, name string) (string, bool, error) {
	if id, ok := x.get(name); ok {
		return id, true, nil
	}
	if _, err, _ := x.group.Do("refresh", func() (any, error) { return nil, x.refresh(ctx) }); err != nil {
		return "", false, err
	}
	id, ok := x.get(name)
	return id, ok, nil
}

func (x *nameIndex) get(name string) (string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	id, ok := x.ids[name]
	return id, ok
}

// forget drops a name whose id the cloud refused (a terminated instance
// whose name was reused), so the next lookup lists again.
func (x *nameIndex) forget(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.ids, name)
}

func (x *nameIndex) refresh(ctx context.Context) error {
	all, err := x.client.ListAllInstances(ctx, lcclient.ListOptions{MaxResults: listPageSize})
	if err != nil {
		return err
	}
	ids := make(map[string]string, len(all))
	for _, in := range all {
		if in.State != api.InstanceTerminated {
			ids[in.Name] = in.ID
		}
	}
	x.mu.Lock()
	x.ids = ids
	x.mu.Unlock()
	return nil
}
