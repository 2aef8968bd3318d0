package sandbox

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

const (
	region      = "local-1"
	clusterName = "sandbox"
	// batchSize is localcloud's limit for one batch create.
	batchSize = 1000
)

func nodeName(i int) string { return fmt.Sprintf("node-%04d", i) }

func zoneName(i, zones int) string { return region + string(rune('a'+i%zones)) }

// ensureInstances creates the instances that do not exist yet (a resumed
// sandbox already has them), spread round-robin over the zones.
func (s *sandbox) ensureInstances(ctx context.Context) error {
	existing, err := s.cloud.ListAllInstances(ctx, lcclient.ListOptions{})
	if err != nil {
		return fmt.Errorf("sandbox: list instances: %w", err)
	}
	have := map[string]bool{}
	for _, in := range existing {
		if in.State != api.InstanceTerminated {
			have[in.Name] = true
		}
	}
	var missing []api.CreateInstanceRequest
	for i := 1; i <= s.o.Nodes; i++ {
		if have[nodeName(i)] {
			continue
		}
		missing = append(missing, api.CreateInstanceRequest{
			Name: nodeName(i), Zone: zoneName(i-1, s.o.Zones), Region: region, Type: "standard-2",
			Tags: map[string]string{"cluster": clusterName},
		})
	}
	for len(missing) > 0 {
		n := min(batchSize, len(missing))
		if _, err := s.cloud.BatchCreateInstances(ctx, missing[:n]); err != nil {
			return fmt.Errorf("sandbox: create instances: %w", err)
		}
		missing = missing[n:]
	}
	return nil
}

// startNodes registers the nodes that do not exist yet, as kubelets with
// --cloud-provider=external do, and starts kwok to keep them Ready.
func (s *sandbox) startNodes(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := 1; i <= s.o.Nodes; i++ {
		name := nodeName(i)
		g.Go(func() error {
			_, err := testbed.CreateNode(gctx, s.kube, name, testbed.NodeOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	kc := filepath.Join(s.state, "kubeconfig")
	args := testbed.KwokArgs(kc, s.writeKwokStages())
	_, err := s.supervise("kwok", func() (*child, error) {
		return startChild("kwok", s.logs, filepath.Join(s.o.BinDir, "kwok"), args...)
	})
	return err
}

func (s *sandbox) writeKwokStages() string {
	path := filepath.Join(s.state, "run", "kwok-stages.yaml")
	_ = writeFile(path, testbed.KwokStages)
	return path
}

// startCCM runs the controller manager with every controller on, under
// supervision; with --no-ccm it only writes its flags into the env file,
// for the user to run their own build.
func (s *sandbox) startCCM(_ context.Context) error {
	cfgPath := filepath.Join(s.state, "run", "cloud.yaml")
	cfg := "url: " + s.localcloudURL() + "\n" +
		"tokenFile: " + filepath.Join(s.state, "localcloud", "token") + "\n" +
		"clusterName: " + clusterName + "\n"
	if s.knobs.RateLimit > 0 {
		// Pace the provider's requests to the cloud's limit, as a cloud
		// SDK would, so a throttled sandbox shows the CCM slowing down
		// rather than collecting 429s.
		cfg += "rateLimitQPS: " + strconv.FormatFloat(s.knobs.RateLimit, 'f', -1, 64) + "\n" +
			"rateLimitBurst: " + strconv.Itoa(max(1, s.knobs.RateBurst/2)) + "\n"
	}
	if err := writeFile(cfgPath, []byte(cfg)); err != nil {
		return err
	}
	args := append([]string{"controller-manager",
		"--cloud-provider=localcloud",
		"--cloud-config=" + cfgPath,
		"--kubeconfig=" + filepath.Join(s.state, "kubeconfig"),
		"--cluster-name=" + clusterName,
		"--leader-elect=true",
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + s.o.ClusterCIDR,
		"--configure-cloud-routes=true",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(s.o.CCMPort),
		"--kube-api-qps=100", "--kube-api-burst=200",
	}, s.o.CCMArgs...)
	s.ccmFlags = args[1:]
	if err := s.writeEnv(); err != nil {
		return err
	}
	if s.o.NoCCM {
		return nil
	}
	_, err := s.supervise("stratus-controller-manager", func() (*child, error) {
		return startChild("stratus-controller-manager", s.logs, s.self, args...)
	})
	return err
}

// waitNodes waits until every node has a providerID and no uninitialized
// taint, reporting progress now and then.
func (s *sandbox) waitNodes(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.ReadyTimeout)
	defer cancel()
	lastReport := time.Now()
	return waitFor(ctx, time.Second, "nodes to be initialized by the controller manager", func(ctx context.Context) (bool, error) {
		if err := s.childrenAlive(); err != nil {
			return false, err
		}
		nodes, err := s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		done := 0
		for i := range nodes.Items {
			if initialized(&nodes.Items[i]) {
				done++
			}
		}
		if time.Since(lastReport) > 5*time.Second {
			fmt.Fprintf(s.out, "            %d/%d nodes initialized\n", done, len(nodes.Items))
			lastReport = time.Now()
		}
		return done >= s.o.Nodes, nil
	})
}

func initialized(n *corev1.Node) bool {
	if n.Spec.ProviderID == "" {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == cloudproviderapi.TaintExternalCloudProvider {
			return false
		}
	}
	return true
}
