package store

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// FileName is the state file in the state directory.
const FileName = "localcloud.db"

// Store is the persistent state of one localcloud.
type Store struct {
	db   *bolt.DB
	path string

	mu            sync.RWMutex
	instances     *table[api.Instance]
	instByName    map[string]string // live (non-terminated) name -> id
	liveInstances int
	lbs           *table[api.LoadBalancer]
	lbByName      map[string]string // cluster/name -> id
	routes        *table[api.Route]
	routeTables   map[string]map[string]*api.Route // cluster -> name -> route
	internal      *allocator
	external      *allocator
	vips          *allocator
	vips6         *allocator // nil without an IPv6 pool
	// generation counts instance changes; changed is closed at the next.
	generation uint64
	changed    chan struct{}
}

// Open opens (creating if needed) the state file in dir and loads it. A
// file that cannot be read whole is an error naming it, and is left as it
// is: nothing is written to a file before all of it has loaded.
func Open(dir string, pools Pools) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("localcloud store: create state dir: %w", err)
	}
	path := filepath.Join(dir, FileName)
	var db *bolt.DB
	err := guard(path, func() error {
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("localcloud store: open %s: %w", path, err)
	}
	s := &Store{
		db:          db,
		path:        path,
		instances:   newTable("instances", "instance", func(i *api.Instance) string { return i.ID }),
		instByName:  map[string]string{},
		lbs:         newTable("loadbalancers", "load balancer", func(lb *api.LoadBalancer) string { return lb.ID }),
		lbByName:    map[string]string{},
		routes:      newTable("routes", "route", func(r *api.Route) string { return routeKey(r.Cluster, r.Name) }),
		routeTables: map[string]map[string]*api.Route{},
		internal:    newAllocator(pools.Internal),
		external:    newAllocator(pools.External),
		vips:        newAllocator(pools.VIP),
	}
	if pools.VIP6.IsValid() {
		s.vips6 = newAllocator(pools.VIP6)
	}
	if err := guard(path, s.load); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("localcloud store: load %s: %w", path, err)
	}
	// Generation 0 is never current, so a watch "after 0" answers at once.
	s.bumpLocked()
	return s, nil
}

// guard runs f with faults turned into panics and panics into an error:
// bbolt panics on a page it cannot make sense of, and reading a truncated
// file through its memory map faults; either is a corrupt file to report,
// not a reason to bring the process down. A panic inside bolt.Open leaves
// its file handle open: the caller is about to report the file and stop.
func guard(path string, f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("state file %s is corrupt (truncated or overwritten): %v", path, p)
		}
	}()
	return f()
}

// Close closes the database.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("localcloud store: close: %w", err)
	}
	return nil
}

// load reads every record in a read-only transaction first, so that a
// corrupt file fails before anything is written to it, then creates the
// buckets a new file lacks.
func (s *Store) load() error {
	buckets := [][]byte{s.instances.bucket, s.lbs.bucket, s.routes.bucket, bucketConfig}
	var missing bool
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, b := range buckets {
			missing = missing || tx.Bucket(b) == nil
		}
		if err := s.instances.load(tx, s.indexInstance); err != nil {
			return err
		}
		if err := s.lbs.load(tx, s.indexLB); err != nil {
			return err
		}
		return s.routes.load(tx, s.indexRoute)
	})
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if !missing {
		// Opening a complete file writes nothing to it.
		return nil
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, b := range buckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		return nil
	})
}

func (s *Store) indexInstance(inst *api.Instance) {
	if old, ok := s.instances.items[inst.ID]; ok && old.State != api.InstanceTerminated {
		s.liveInstances--
		delete(s.instByName, old.Name)
		s.internal.release(old.Addresses.Internal)
		s.internal.release(old.Addresses.Internal6)
		s.external.release(old.Addresses.External)
	}
	s.instances.items[inst.ID] = inst
	s.bumpLocked()
	if inst.State != api.InstanceTerminated {
		s.liveInstances++
		s.instByName[inst.Name] = inst.ID
		s.internal.use(inst.Addresses.Internal)
		s.internal.use(inst.Addresses.Internal6)
		s.external.use(inst.Addresses.External)
	}
}

func (s *Store) indexLB(lb *api.LoadBalancer) {
	s.lbs.items[lb.ID] = lb
	s.lbByName[lb.Cluster+"/"+lb.Name] = lb.ID
	s.vips.use(lb.VIP)
	if s.vips6 != nil {
		s.vips6.use(lb.VIP6)
	}
}

func (s *Store) unindexLB(lb *api.LoadBalancer) {
	delete(s.lbs.items, lb.ID)
	delete(s.lbByName, lb.Cluster+"/"+lb.Name)
	s.vips.release(lb.VIP)
	if s.vips6 != nil {
		s.vips6.release(lb.VIP6)
	}
}

func (s *Store) indexRoute(r *api.Route) {
	s.routes.items[routeKey(r.Cluster, r.Name)] = r
	t := s.routeTables[r.Cluster]
	if t == nil {
		t = map[string]*api.Route{}
		s.routeTables[r.Cluster] = t
	}
	t[r.Name] = r
}

func (s *Store) unindexRoute(r *api.Route) {
	delete(s.routes.items, routeKey(r.Cluster, r.Name))
	delete(s.routeTables[r.Cluster], r.Name)
}

func newID(prefix string) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a panic here
		// would be a broken runtime, not a user error.
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return prefix + "-" + hex.EncodeToString(b[:])
}
