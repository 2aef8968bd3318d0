package faults

import "testing"

// The panic scan must see what a panic leaves in a log, and nothing in
// the lines these processes log when all is well.
func TestPanicTrace(t *testing.T) {
	for text, want := range map[string]bool{
		"panic: runtime error: invalid memory address or nil pointer dereference\n":                         true,
		"I1123 17:00:00.000000 1 x.go:1] \"msg\"\ngoroutine 42 [running]:\nmain.main()\n":                   true,
		"fatal error: concurrent map writes\n":                                                              true,
		"E1123 runtime.go:79] \"Observed a panic\" panic=\"boom\"\n":                                        true,
		"I1123 17:00:00.000000 1 x.go:1] \"Shutdown signal received, waiting for all workers to finish\"\n": false,
		"I1123 17:00:00.000000 1 flags.go:64] FLAG: --disable-admission-plugins=\"[ServiceAccount]\"\n":     false,
		"{\"level\":\"info\",\"msg\":\"became leader at term 2\"}\n":                                        false,
	} {
		if got := panicTrace.MatchString(text); got != want {
			t.Errorf("%q: matched %v, want %v", text, got, want)
		}
	}
}
