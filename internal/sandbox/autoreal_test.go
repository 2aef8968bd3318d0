package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The default number of real nodes: none, with the reason, without root,
// a program or memory; otherwise one per CPU, at least two, at most four,
// within a quarter of the available memory.
func TestAutoRealNodes(t *testing.T) {
	t.Parallel()
	full := t.TempDir()
	for _, b := range []string{"kubelet", "kube-proxy", "kube-controller-manager", "kube-scheduler", "containerd",
		"containerd-shim-runc-v2", "ctr", "cni/bridge", "cni/host-local", "cni/loopback", "images/pause.tar", "images/demo.tar", "images/coredns.tar"} {
		p := filepath.Join(full, b)
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	found := func(name string) (string, error) { return "/usr/sbin/" + name, nil }
	noNft := func(name string) (string, error) {
		if name == "nft" {
			return "", errors.New("not found")
		}
		return found(name)
	}
	for name, tc := range map[string]struct {
		env     realNodeEnv
		want    int
		because string
	}{
		"not root":       {realNodeEnv{euid: 1000, binDir: full, cpus: 2, memAvailMiB: 16000, lookPath: found}, 0, "need root"},
		"no tools":       {realNodeEnv{euid: 0, binDir: t.TempDir(), cpus: 2, memAvailMiB: 16000, lookPath: found}, 0, "kubelet, kube-proxy"},
		"no nft":         {realNodeEnv{euid: 0, binDir: full, cpus: 2, memAvailMiB: 16000, lookPath: noNft}, 0, "nft not installed"},
		"little memory":  {realNodeEnv{euid: 0, binDir: full, cpus: 2, memAvailMiB: 1500, lookPath: found}, 0, "only 1500 MiB"},
		"two cores":      {realNodeEnv{euid: 0, binDir: full, cpus: 2, memAvailMiB: 16000, lookPath: found}, 2, ""},
		"one core":       {realNodeEnv{euid: 0, binDir: full, cpus: 1, memAvailMiB: 16000, lookPath: found}, 2, ""},
		"many cores":     {realNodeEnv{euid: 0, binDir: full, cpus: 64, memAvailMiB: 16000, lookPath: found}, 4, ""},
		"memory bound":   {realNodeEnv{euid: 0, binDir: full, cpus: 64, memAvailMiB: 2500, lookPath: found}, 3, ""},
		"memory unknown": {realNodeEnv{euid: 0, binDir: full, cpus: 8, memAvailMiB: -1, lookPath: found}, 4, ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n, why := autoRealNodes(tc.env)
			if n != tc.want || (tc.because == "") != (why == "") || !strings.Contains(why, tc.because) {
				t.Errorf("autoRealNodes = %d, %q; want %d and a reason containing %q", n, why, tc.want, tc.because)
			}
		})
	}
}
