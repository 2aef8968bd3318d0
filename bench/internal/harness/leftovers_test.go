package harness

import "testing"

func TestNamesDir(t *testing.T) {
	for _, tc := range []struct {
		cmdline string
		want    bool
	}{
		{"etcd\x00--data-dir=/w/run/etcd\x00", true},
		{"kwok\x00--kubeconfig\x00/w/run/kubeconfig\x00", true},
		{"x\x00/w/run\x00", true},
		{"etcd\x00--data-dir=/w/run2/etcd\x00", false},
		{"etcd\x00--data-dir=/w/other\x00", false},
		{"sh\x00-c\x00echo /w/run/x\x00", false},
	} {
		if got := namesDir([]byte(tc.cmdline), "/w/run"); got != tc.want {
			t.Errorf("namesDir(%q) = %v, want %v", tc.cmdline, got, tc.want)
		}
	}
}
