package client

import (
	"encoding/json"
	"slices"
	"testing"
	"unsafe"
)

// The backends of a listing decode as encoding/json decodes them, with
// each id one string and equal lists one slice.
func TestIDTableDecodesAndShares(t *testing.T) {
	t.Parallel()
	tab := newIDTable()
	decode := func(in string) []string {
		t.Helper()
		got, err := tab.decode([]byte(in))
		if err != nil {
			t.Fatalf("decode %s: %v", in, err)
		}
		var want []string
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("decode %s = %#v, encoding/json gives %#v", in, got, want)
		}
		return got
	}
	a := decode(`["i-1","i-2", "i-3"]`)
	b := decode(" [ \"i-1\" ,\n\"i-2\",\"i-3\" ] ")
	c := decode(`["i-3","i-1"]`)
	if unsafe.SliceData(a) != unsafe.SliceData(b) {
		t.Error("equal backend lists got a slice each")
	}
	if unsafe.StringData(c[0]) != unsafe.StringData(a[2]) {
		t.Error("the id i-3 was made twice")
	}
	decode(`["i-\u0031", "i-\"q"]`) // escapes take encoding/json's path
	decode(`[]`)
	decode(`null`)
	for _, bad := range []string{`[`, `["i-1",]`, `["i-1" "i-2"]`, `[1]`, `["i-1`, `{}`} {
		if _, err := tab.decode([]byte(bad)); err == nil {
			t.Errorf("decode %s: no error", bad)
		}
	}
}
