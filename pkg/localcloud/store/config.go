package store

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

var (
	bucketConfig = []byte("config")
	keyKnobs     = []byte("knobs")
)

// Knobs returns the realism settings saved by SaveKnobs; ok is false when
// none were ever saved (a new cloud).
func (s *Store) Knobs() (k api.Knobs, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucketConfig).Get(keyKnobs)
		if data == nil {
			return nil
		}
		ok = true
		return json.Unmarshal(data, &k)
	})
	if err != nil {
		return api.Knobs{}, false, fmt.Errorf("localcloud store: read knobs from %s: %w", s.path, err)
	}
	return k, ok, nil
}

// SaveKnobs persists the realism settings, so that faults set at runtime
// survive a restart of the cloud.
func (s *Store) SaveKnobs(k api.Knobs) error {
	return put(s.db, bucketConfig, map[string]any{string(keyKnobs): k})
}
