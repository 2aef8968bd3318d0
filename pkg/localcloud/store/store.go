package store

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

var (
	bucketInstances = []byte("instances")
	bucketLBs       = []byte("loadbalancers")
	bucketRoutes    = []byte("routes")
)

// Pools are the address ranges the cloud allocates from.
type Pools struct {
	Internal netip.Prefix
	External netip.Prefix
	VIP      netip.Prefix
}

// DefaultPools returns the default pools: internal addresses in
// 127.1.0.0/16 give each fake node its own loopback address a test can bind
// to; VIPs live in 127.0.100.0/24.
func DefaultPools() Pools {
	return Pools{
		Internal: netip.MustParsePrefix("127.1.0.0/16"),
		External: netip.MustParsePrefix("127.2.0.0/16"),
		VIP:      netip.MustParsePrefix("127.0.100.0/24"),
	}
}

// Store is the persistent state of one localcloud.
type Store struct {
	db *bolt.DB

	mu            sync.RWMutex
	instances     map[string]*api.Instance
	instByName    map[string]string // live (non-terminated) name -> id
	liveInstances int
	lbs           map[string]*api.LoadBalancer
	lbByName      map[string]string // cluster/name -> id
	routes        map[string]map[string]*api.Route
	internal      *allocator
	external      *allocator
	vips          *allocator
	// generation counts instance changes; changed is closed at the next.
	generation uint64
	changed    chan struct{}
}

// Open opens (creating if needed) the database in dir and loads it.
func Open(dir string, pools Pools) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("localcloud store: create state dir: %w", err)
	}
	db, err := bolt.Open(filepath.Join(dir, "localcloud.db"), 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("localcloud store: open %s: %w", dir, err)
	}
	s := &Store{
		db:         db,
		instances:  map[string]*api.Instance{},
		instByName: map[string]string{},
		lbs:        map[string]*api.LoadBalancer{},
		lbByName:   map[string]string{},
		routes:     map[string]map[string]*api.Route{},
		internal:   newAllocator(pools.Internal),
		external:   newAllocator(pools.External),
		vips:       newAllocator(pools.VIP),
	}
	if err := s.load(); err != nil {
		_ = db.Close()
		return nil, err
	}
	// Generation 0 is never current, so a watch "after 0" answers at once.
	s.bumpLocked()
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("localcloud store: close: %w", err)
	}
	return nil
}

func (s *Store) load() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketInstances, bucketLBs, bucketRoutes, bucketConfig} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("localcloud store: create bucket %s: %w", b, err)
			}
		}
		err := tx.Bucket(bucketInstances).ForEach(func(k, v []byte) error {
			inst := &api.Instance{}
			if err := json.Unmarshal(v, inst); err != nil {
				return fmt.Errorf("localcloud store: decode instance %s: %w", k, err)
			}
			s.indexInstance(inst)
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(bucketLBs).ForEach(func(k, v []byte) error {
			lb := &api.LoadBalancer{}
			if err := json.Unmarshal(v, lb); err != nil {
				return fmt.Errorf("localcloud store: decode load balancer %s: %w", k, err)
			}
			s.indexLB(lb)
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketRoutes).ForEach(func(k, v []byte) error {
			r := &api.Route{}
			if err := json.Unmarshal(v, r); err != nil {
				return fmt.Errorf("localcloud store: decode route %s: %w", k, err)
			}
			s.indexRoute(r)
			return nil
		})
	})
}

func (s *Store) indexInstance(inst *api.Instance) {
	if old, ok := s.instances[inst.ID]; ok && old.State != api.InstanceTerminated {
		s.liveInstances--
		delete(s.instByName, old.Name)
		s.internal.release(old.Addresses.Internal)
		s.external.release(old.Addresses.External)
	}
	s.instances[inst.ID] = inst
	s.bumpLocked()
	if inst.State != api.InstanceTerminated {
		s.liveInstances++
		s.instByName[inst.Name] = inst.ID
		s.internal.use(inst.Addresses.Internal)
		s.external.use(inst.Addresses.External)
	}
}

func (s *Store) indexLB(lb *api.LoadBalancer) {
	s.lbs[lb.ID] = lb
	s.lbByName[lb.Cluster+"/"+lb.Name] = lb.ID
	s.vips.use(lb.VIP)
}

func (s *Store) unindexLB(lb *api.LoadBalancer) {
	delete(s.lbs, lb.ID)
	delete(s.lbByName, lb.Cluster+"/"+lb.Name)
	s.vips.release(lb.VIP)
}

func (s *Store) indexRoute(r *api.Route) {
	t := s.routes[r.Cluster]
	if t == nil {
		t = map[string]*api.Route{}
		s.routes[r.Cluster] = t
	}
	t[r.Name] = r
}

// put writes JSON records in one transaction: the commit is the point at
// which a write becomes acknowledged.
func (s *Store) put(bucket []byte, recs map[string]any, deletes ...string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		for k, v := range recs {
			data, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("encode %s: %w", k, err)
			}
			if err := b.Put([]byte(k), data); err != nil {
				return fmt.Errorf("put %s: %w", k, err)
			}
		}
		for _, k := range deletes {
			if err := b.Delete([]byte(k)); err != nil {
				return fmt.Errorf("delete %s: %w", k, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("localcloud store: commit %s: %w", bucket, err)
	}
	return nil
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

// page sorts keys and returns the slice after the token's key, at most limit long.
func page(keys []string, token string, limit int) ([]string, string, error) {
	sort.Strings(keys)
	start := 0
	if token != "" {
		raw, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || len(raw) == 0 {
			return nil, "", api.Invalid("pageToken", fmt.Sprintf("%q is not a token this server issued", token))
		}
		start = sort.SearchStrings(keys, string(raw))
		if start < len(keys) && keys[start] == string(raw) {
			start++
		}
	}
	if limit <= 0 {
		limit = api.DefaultPage
	}
	end := min(start+limit, len(keys))
	next := ""
	if end < len(keys) {
		next = base64.RawURLEncoding.EncodeToString([]byte(keys[end-1]))
	}
	return keys[start:end], next, nil
}

// allocator hands out addresses of a prefix, skipping the network address
// and the last address, with a moving cursor so that sequential allocation
// stays cheap even when thousands are in use.
type allocator struct {
	prefix netip.Prefix
	used   map[netip.Addr]bool
	cursor netip.Addr
}

func newAllocator(p netip.Prefix) *allocator {
	return &allocator{prefix: p.Masked(), used: map[netip.Addr]bool{}, cursor: p.Masked().Addr()}
}

var errPoolExhausted = errors.New("address pool exhausted")

func (a *allocator) size() int {
	bits := a.prefix.Addr().BitLen() - a.prefix.Bits()
	if bits >= 30 {
		return 1 << 30
	}
	return 1 << bits
}

// next returns a free address without marking it used, so that a failed
// commit leaves nothing to undo.
func (a *allocator) next(skip map[netip.Addr]bool) (netip.Addr, error) {
	c := a.cursor
	for range a.size() {
		c = c.Next()
		if !c.IsValid() || !a.prefix.Contains(c) {
			c = a.prefix.Addr().Next()
		}
		last := !a.prefix.Contains(c.Next())
		if last || c == a.prefix.Addr() || a.used[c] || skip[c] {
			continue
		}
		return c, nil
	}
	return netip.Addr{}, fmt.Errorf("%s: %w", a.prefix, errPoolExhausted)
}

// usable tells whether addr is an address next may hand out: inside the
// prefix, neither its first nor its last address.
func (a *allocator) usable(addr netip.Addr) bool {
	return a.prefix.Contains(addr) && addr != a.prefix.Addr() && a.prefix.Contains(addr.Next())
}

func (a *allocator) use(s string) {
	if addr, err := netip.ParseAddr(s); err == nil {
		a.used[addr] = true
		a.cursor = addr
	}
}

func (a *allocator) release(s string) {
	if addr, err := netip.ParseAddr(s); err == nil {
		delete(a.used, addr)
	}
}
