package observe

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// ignored are fields that change on every write (or every dry run) without
// the object changing in substance.
var ignored = map[string]bool{
	"metadata.resourceVersion": true,
	"metadata.managedFields":   true,
	"metadata.generation":      true,
}

// maxValue bounds a value printed in a diff line.
const maxValue = 200

// Diff lists what differs between two JSON objects as "path: old → new"
// lines, sorted; nil when they are equal (apart from the ignored fields).
func Diff(before, after map[string]any) []string {
	var out []string
	diffValue("", before, after, &out)
	sort.Strings(out)
	return out
}

func diffValue(path string, a, b any, out *[]string) {
	if ignored[path] {
		return
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			diffValue(p, am[k], bm[k], out)
		}
		return
	}
	ja, jb := render(a), render(b)
	if ja != jb {
		*out = append(*out, fmt.Sprintf("%s: %s → %s", path, ja, jb))
	}
}

func render(v any) string {
	if v == nil {
		return "<none>"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > maxValue {
		s = s[:maxValue] + "…"
	}
	return strings.ReplaceAll(s, "\n", " ")
}
