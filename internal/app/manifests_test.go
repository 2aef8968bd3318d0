package app_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// readArgs reads a testdata/manifests file: one argument a line, '#'
// comments.
func readArgs(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "manifests", name))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var args []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			args = append(args, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return args
}

// Vendors' published manifests start Stratus with their argument lists
// unchanged. The manifests run in a pod and give no --kubeconfig, so the
// process gets the API server from $KUBECONFIG (what a pod's in-cluster
// environment gives it). They give no --secure-port either: the default
// 10258 on every address is served. The provider behind the vendor's name
// is the test provider (see testdata/fakeccm).
func TestVendorManifestArgsStart(t *testing.T) {
	env := sharedEnv(t)
	bin := buildFakeCCM(t)
	cases := []struct{ file, binary string }{
		// hcloud's image runs the binary itself: upstream's command.
		{"hcloud-ccm.args", "cloud-controller-manager"},
		{"digitalocean-ccm.args", "digitalocean-cloud-controller-manager"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			ctx := testbed.Context(t, 2*time.Minute)
			args := readArgs(t, c.file)
			link := filepath.Join(t.TempDir(), c.binary)
			if err := os.Symlink(bin, link); err != nil {
				t.Fatal(err)
			}
			t.Setenv("KUBECONFIG", env.Kubeconfig)
			// The port must be free, or /readyz would be answered by
			// whatever holds it (a sandbox, say) rather than this daemon.
			ln, err := net.Listen("tcp", ":10258")
			if err != nil {
				t.Fatalf("the manifests give no --secure-port, so the daemon needs the default 10258, which is in use (a running sandbox?): %v", err)
			}
			_ = ln.Close()
			p := testbed.StartProcess(t, filepath.Join(t.TempDir(), "ccm.log"), link, args...)
			waitReady(ctx, t, 10258)
			if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				return pidOf(initializedBy(ctx, env.Clientset)) == p.Pid(), nil
			}); err != nil {
				t.Fatalf("%v did not initialize the provider (lead): %v", args, err)
			}
			// Stop it so that the next manifest can have the default port.
			if err := p.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code, err := p.Wait(40 * time.Second); err != nil || code != 0 {
				t.Fatalf("graceful stop: exit %d, %v", code, err)
			}
		})
	}
}
