package realnode_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/localcluster/realnode"
)

// childEnv makes the test binary a cluster holder that the test kills.
const childEnv = "STRATUS_REALNODE_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		if err := runChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childSpec is what the child needs, passed through the environment:
// bin dir, root, API server port, node name and a directory of kubeconfigs
// named after the users they authenticate as.
type childSpec struct {
	bin, root, node, kubeconfigs string
	port                         int
}

func (c childSpec) String() string {
	return strings.Join([]string{c.bin, c.root, strconv.Itoa(c.port), c.node, c.kubeconfigs}, "|")
}

// runChild starts a cluster with one node, says READY with the slot's
// name, and waits to be killed.
func runChild(spec string) error {
	f := strings.Split(spec, "|")
	if len(f) != 5 {
		return fmt.Errorf("bad spec %q", spec)
	}
	port, err := strconv.Atoi(f[2])
	if err != nil {
		return err
	}
	ctx := context.Background()
	c, err := realnode.Start(ctx, realnode.Config{BinDir: f[0], Root: f[1], APIServerPort: port, LoadBalancerNetwork: true,
		Credentials: func(user string, _ ...string) (*rest.Config, error) {
			return clientcmd.BuildConfigFromFlags("", filepath.Join(f[4], user))
		}})
	if err != nil {
		return err
	}
	if _, err := c.AddNode(ctx, f[3]); err != nil {
		return err
	}
	fmt.Printf("READY %s\n", c.Name())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	<-sigs
	return c.Stop(ctx)
}

// startChild runs a holder of one node in a process of its own and
// returns it and its slot's name once the node's daemons are up.
func startChild(t *testing.T, cp *localcluster.ControlPlane, bin, root, node string) (*exec.Cmd, string) {
	t.Helper()
	kcDir := t.TempDir()
	for _, u := range []struct {
		user   string
		groups []string
	}{{"system:node:" + node, []string{"system:nodes"}}, {"system:kube-proxy", nil}} {
		cfg, err := cp.UserConfig(u.user, u.groups...)
		if err != nil {
			t.Fatal(err)
		}
		if err := localcluster.WriteKubeconfig(cfg, filepath.Join(kcDir, u.user)); err != nil {
			t.Fatal(err)
		}
	}
	spec := childSpec{bin: bin, root: root, node: node, kubeconfigs: kcDir, port: cp.APIServerPort}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+spec.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				lines <- name
				return
			}
		}
		close(lines)
	}()
	select {
	case name, ok := <-lines:
		if !ok {
			t.Fatal("the child exited before its node was up")
		}
		return cmd, name
	case <-time.After(2 * time.Minute):
		t.Fatal("the child's node was not up within 2 minutes")
	}
	return nil, ""
}
