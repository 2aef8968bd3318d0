package sandbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

const (
	region      = "local-1"
	clusterName = "sandbox"
	// batchSize is localcloud's limit for one batch create.
	batchSize = 1000
	// ownTag marks the instances the sandbox made for --nodes, the only
	// ones a smaller --nodes removes: a machine a user created (even one
	// named node-0042) is theirs.
	ownTag = "sandbox-node"
)

func nodeName(i int) string { return fmt.Sprintf("node-%04d", i) }

func zoneName(i, zones int) string { return region + string(rune('a'+i%zones)) }

// ensureInstances creates the instances that do not exist yet (a resumed
// sandbox already has them), spread round-robin over the zones, and
// removes those a smaller --nodes no longer wants.
func (s *sandbox) ensureInstances(ctx context.Context) error {
	existing, err := s.cloud.ListAllInstances(ctx, lcclient.ListOptions{Tags: map[string]string{api.TagCluster: clusterName}})
	if err != nil {
		return fmt.Errorf("sandbox: list instances: %w", err)
	}
	have := map[string]bool{}
	for _, in := range existing {
		if in.State != api.InstanceTerminated {
			have[in.Name] = true
		}
	}
	if err := s.scaleDown(ctx, existing); err != nil {
		return err
	}
	var missing []api.CreateInstanceRequest
	for i := 1; i <= s.o.Nodes; i++ {
		if have[nodeName(i)] {
			continue
		}
		missing = append(missing, api.CreateInstanceRequest{
			Name: nodeName(i), Zone: zoneName(i-1, s.o.Zones), Region: region, Type: "standard-2",
			Tags: map[string]string{api.TagCluster: clusterName, ownTag: "true"},
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

// scaleDown deletes the sandbox's own instances numbered above --nodes and
// their nodes, as an operator shrinking a node pool drains and deletes
// them: a resumed sandbox then has --nodes nodes, not the most it ever had.
// Instances a user created (with `stratus localcloud instances create`)
// stay, whatever their names.
func (s *sandbox) scaleDown(ctx context.Context, existing []api.Instance) error {
	var removed []string
	for _, in := range existing {
		if !s.surplus(in) {
			continue
		}
		if _, err := s.cloud.DeleteInstance(ctx, in.ID); err != nil && !errors.Is(err, lcclient.ErrNotFound) {
			return fmt.Errorf("sandbox: scale down to %d nodes: %w", s.o.Nodes, err)
		}
		if err := s.kube.CoreV1().Nodes().Delete(ctx, in.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("sandbox: scale down to %d nodes: delete node %s: %w", s.o.Nodes, in.Name, err)
		}
		removed = append(removed, in.Name)
	}
	if len(removed) > 0 {
		slices.Sort(removed)
		fmt.Fprintf(s.out, "            --nodes %d: removed %d instances and their nodes (%s ... %s)\n", s.o.Nodes, len(removed), removed[0], removed[len(removed)-1])
	}
	return nil
}

func (s *sandbox) writeKwokStages() string {
	path := filepath.Join(s.state, "run", "kwok-stages.yaml")
	_ = writeFile(path, localcluster.KwokStages)
	return path
}

// surplus reports whether in is one of the sandbox's own live instances
// numbered above --nodes.
func (s *sandbox) surplus(in api.Instance) bool {
	var i int
	if _, err := fmt.Sscanf(in.Name, "node-%04d", &i); err != nil || in.Name != nodeName(i) {
		return false
	}
	return i > s.o.Nodes && in.Tags[ownTag] == "true" && in.State != api.InstanceTerminated
}

// startCCM runs the controller manager with every controller on, under
// supervision; with --no-ccm it only writes its flags into the env file,
// for the user to run their own build.
func (s *sandbox) startCCM(ctx context.Context) error {
	cfgPath := filepath.Join(s.state, "run", "cloud.yaml")
	cfg := s.cloudConfig(s.localcloudURL(), "tokenFile: "+filepath.Join(s.state, "localcloud", "token"))
	if err := writeFile(cfgPath, []byte(cfg)); err != nil {
		return err
	}
	args := append([]string{"controller-manager",
		"--cloud-provider=localcloud",
		"--cloud-config=" + cfgPath,
		"--kubeconfig=" + s.ccmKubeconfig(),
		"--use-service-account-credentials",
		"--cluster-name=" + clusterName,
		"--leader-elect=true",
		// The sandbox's IPAM is Stratus' (kube-controller-manager, with
		// --real-nodes, allocates none), which runs only when named.
		"--controllers=*,node-ipam-controller",
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + s.clusterCIDRs(),
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
	_, err := s.superviseAPIClient(ctx, "stratus-controller-manager", func() (*child, error) {
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
		return done >= s.o.Nodes+s.o.RealNodes, nil
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

// cloudConfig is the provider's cloud config for the sandbox's cloud at
// url, with the token given as a line (tokenFile for a process on the
// machine, token inline for a pod).
func (s *sandbox) cloudConfig(url, tokenLine string) string {
	cfg := "url: " + url + "\n" + tokenLine + "\n" + "clusterName: " + clusterName + "\n"
	if s.knobs.RateLimit > 0 {
		// Pace the provider's requests to the cloud's limit, as a cloud
		// SDK would, so a throttled sandbox shows the CCM slowing down
		// rather than collecting 429s.
		cfg += "rateLimitQPS: " + strconv.FormatFloat(s.knobs.RateLimit, 'f', -1, 64) + "\n" +
			"rateLimitBurst: " + strconv.Itoa(max(1, s.knobs.RateBurst/2)) + "\n"
	}
	if s.o.Nodes == 0 {
		// Every node is real and runs kube-proxy: Cluster-policy load
		// balancers probe its /healthz, as GCE's do. Beside kwok nodes
		// they cannot, since those have no kube-proxy.
		cfg += "kubeProxyHealthPort: 10256\n"
	}
	if s.dual {
		cfg += "ipFamilies: IPv4,IPv6\n"
	}
	if s.endpointTargets() {
		// The load-balancer namespace reaches pod CIDRs through the
		// cloud's route table: load balancers may target pods.
		cfg += "endpointTargets: true\n"
	}
	return cfg
}
