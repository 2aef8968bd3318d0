package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
)

// idTable interns the backend lists of one listing: every instance id is
// one string, and load balancers with the same backends (in a cluster,
// nearly all of them) get one shared slice. Decoding 300 load balancers of
// 5,000 backends each then allocates 5,000 strings and one slice instead
// of 1.5 million strings and 300 growing slices. Callers only read the
// lists, as EachLoadBalancer's doc says.
type idTable struct {
	seed    maphash.Seed
	strings map[string]string
	lists   map[uint64][][]string
	scratch []string
}

func newIDTable() *idTable {
	return &idTable{seed: maphash.MakeSeed(), strings: map[string]string{}, lists: map[uint64][][]string{}}
}

// backendIDs decodes a JSON array of instance ids through its table.
type backendIDs struct {
	table *idTable
	ids   []string
}

func (b *backendIDs) UnmarshalJSON(data []byte) error {
	if b.table == nil {
		return json.Unmarshal(data, &b.ids)
	}
	ids, err := b.table.decode(data)
	if err != nil {
		return fmt.Errorf("backends: %w", err)
	}
	b.ids = ids
	return nil
}

// decode parses a JSON array of strings. Strings with escapes (instance
// ids never have any) take encoding/json's path.
func (t *idTable) decode(data []byte) ([]string, error) {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("null")) {
		return nil, nil
	}
	if len(data) < 2 || data[0] != '[' || data[len(data)-1] != ']' {
		return nil, fmt.Errorf("want an array of strings")
	}
	t.scratch = t.scratch[:0]
	rest := bytes.TrimSpace(data[1 : len(data)-1])
	for len(rest) > 0 {
		if rest[0] != '"' {
			return nil, fmt.Errorf("want an array of strings")
		}
		end := bytes.IndexByte(rest[1:], '"') + 1
		if end == 0 {
			return nil, fmt.Errorf("unterminated string")
		}
		raw := rest[1:end]
		if bytes.IndexByte(raw, '\\') >= 0 {
			var all []string
			if err := json.Unmarshal(data, &all); err != nil {
				return nil, err
			}
			t.scratch = t.scratch[:0]
			for _, s := range all {
				t.scratch = append(t.scratch, t.intern(s))
			}
			return t.list(), nil
		}
		s, ok := t.strings[string(raw)]
		if !ok {
			s = string(raw)
			t.strings[s] = s
		}
		t.scratch = append(t.scratch, s)
		rest = bytes.TrimSpace(rest[end+1:])
		if len(rest) == 0 {
			break
		}
		if rest[0] != ',' {
			return nil, fmt.Errorf("want an array of strings")
		}
		rest = bytes.TrimSpace(rest[1:])
		if len(rest) == 0 {
			return nil, fmt.Errorf("trailing comma")
		}
	}
	return t.list(), nil
}

func (t *idTable) intern(s string) string {
	if v, ok := t.strings[s]; ok {
		return v
	}
	t.strings[s] = s
	return s
}

// list returns the shared copy of the scratch list.
func (t *idTable) list() []string {
	var h maphash.Hash
	h.SetSeed(t.seed)
	for _, id := range t.scratch {
		_, _ = h.WriteString(id)
		_ = h.WriteByte(0)
	}
	sum := h.Sum64()
	for _, l := range t.lists[sum] {
		if slices.Equal(l, t.scratch) {
			return l
		}
	}
	l := slices.Clone(t.scratch)
	if l == nil {
		l = []string{}
	}
	t.lists[sum] = append(t.lists[sum], l)
	return l
}
