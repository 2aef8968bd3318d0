package store

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// table is one kind of record: the bbolt bucket it is stored in and the
// in-memory copy every read is served from, keyed as in the bucket. Loading,
// lookup, paging and commits are the same for every kind; what differs (the
// indexes a kind keeps beside its records) stays with the kind.
type table[T any] struct {
	bucket []byte
	// kind names one record in errors ("instance", "load balancer").
	kind string
	// key is the record's key in the bucket and in items.
	key   func(*T) string
	items map[string]*T
}

func newTable[T any](bucket, kind string, key func(*T) string) *table[T] {
	return &table[T]{bucket: []byte(bucket), kind: kind, key: key, items: map[string]*T{}}
}

// load decodes every record of the bucket and hands it to index. A record
// that does not decode, or whose key is not the one its content gives, is
// an error naming it: the file is corrupt there, and guessing would hand
// out addresses or names a lost record still holds.
func (t *table[T]) load(tx *bolt.Tx, index func(*T)) error {
	b := tx.Bucket(t.bucket)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		rec := new(T)
		if err := json.Unmarshal(v, rec); err != nil {
			return fmt.Errorf("decode %s %s/%s: %w", t.kind, t.bucket, k, err)
		}
		if got := t.key(rec); got != string(k) {
			return fmt.Errorf("decode %s %s/%s: the record is keyed %q", t.kind, t.bucket, k, got)
		}
		index(rec)
		return nil
	})
}

// get returns the record with key id, or the API's not-found error.
func (t *table[T]) get(id string) (*T, error) {
	rec, ok := t.items[id]
	if !ok {
		return nil, api.NotFound("id", fmt.Sprintf("%s %s not found", t.kind, id))
	}
	return rec, nil
}

// read returns a copy of the record of t with key id, under the store's
// read lock.
func read[T any](s *Store, t *table[T], id string) (T, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec, err := t.get(id)
	if err != nil {
		var zero T
		return zero, err
	}
	return *rec, nil
}

// matching returns the keys of the records match accepts.
func (t *table[T]) matching(match func(*T) bool) []string {
	keys := make([]string, 0, len(t.items))
	for k, rec := range t.items {
		if match(rec) {
			keys = append(keys, k)
		}
	}
	return keys
}

// page returns copies of one page of the records with the given keys, in
// key order, and the token of the next page.
func (t *table[T]) page(keys []string, token string, limit int) ([]T, string, error) {
	keys, next, err := page(keys, token, limit)
	if err != nil {
		return nil, "", err
	}
	out := make([]T, len(keys))
	for i, k := range keys {
		out[i] = *t.items[k]
	}
	return out, next, nil
}

// all returns a copy of every record, in no order.
func (t *table[T]) all() []T {
	out := make([]T, 0, len(t.items))
	for _, rec := range t.items {
		out = append(out, *rec)
	}
	return out
}

// save commits recs; the caller applies them in memory only once it
// returned nil, so a failed commit leaves nothing to undo.
func (t *table[T]) save(db *bolt.DB, recs ...*T) error {
	m := make(map[string]any, len(recs))
	for _, rec := range recs {
		m[t.key(rec)] = rec
	}
	return put(db, t.bucket, m)
}

// remove commits the deletion of the records with the given keys.
func (t *table[T]) remove(db *bolt.DB, keys ...string) error {
	return put(db, t.bucket, nil, keys...)
}

// put writes JSON records and deletes keys in one transaction: the commit
// is the point at which a write becomes acknowledged.
func put(db *bolt.DB, bucket []byte, recs map[string]any, deletes ...string) error {
	err := db.Update(func(tx *bolt.Tx) error {
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
