package sandbox

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// ChartValuesFile is the file in the state dir that `stratus sandbox
// --no-ccm` with real nodes writes for `helm install stratus
// charts/stratus -n kube-system --values FILE`: what the chart needs to
// run as pods on the sandbox's real nodes.
const ChartValuesFile = "chart-values.yaml"

// writeChartValues writes ChartValuesFile, and the real nodes' containerd
// sockets to the env file, for the image to be imported into each node.
//
// The values are the chart's defaults but for what this cluster has no
// other way to give: the image is in the nodes' containerd, not in a
// registry (pull policy Never; the chart's default reference is what
// `make image` tags); the pods run on the host network of a real node
// (kwok's nodes run no pods), where the machine's loopback is not
// reachable: localcloud is on the machine's address on the nodes' bridge
// and the API server on each node's own loopback, through the real
// nodes' relay, so the in-cluster config is pointed there, as
// kubeadm-style clusters point a CCM that runs before kube-proxy at the
// control plane. The controllers are those the sandbox's own Stratus
// runs, with its cluster name, cluster CIDR and routes.
func (s *sandbox) writeChartValues(_ context.Context) error {
	extraArgs := append([]string{}, s.o.CCMArgs...)
	values := map[string]any{
		"image":                map[string]any{"pullPolicy": "Never"},
		"replicas":             min(2, s.o.RealNodes),
		"cloudConfig":          map[string]any{"create": true, "data": s.cloudConfig(s.localcloudURL(), "token: "+s.lcToken)},
		"clusterName":          clusterName,
		"allocateNodeCIDRs":    true,
		"clusterCIDR":          s.o.ClusterCIDR,
		"configureCloudRoutes": true,
		"extraArgs":            extraArgs,
		"extraEnv": []map[string]string{
			{"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
			{"name": "KUBERNETES_SERVICE_PORT", "value": strconv.Itoa(s.o.APIServerPort)},
		},
		"nodeSelector": map[string]string{RealNodeLabel: "true"},
	}
	data, err := yaml.Marshal(values)
	if err != nil {
		return fmt.Errorf("sandbox: the chart's values: %w", err)
	}
	header := "# helm install " + helmRelease + " charts/stratus -n kube-system --values " + s.chartValuesPath() + "\n" +
		"# after importing the image into every real node (see docs/sandbox.md).\n"
	if err := writeFile(s.chartValuesPath(), append([]byte(header), data...)); err != nil {
		return err
	}
	s.envMu.Lock()
	s.nodeSockets = s.nodeSockets[:0]
	for i := 1; i <= s.o.RealNodes; i++ {
		if n := s.realNode(realNodeName(i)); n != nil {
			s.nodeSockets = append(s.nodeSockets, n.ContainerdSocket())
		}
	}
	s.envMu.Unlock()
	return s.writeEnv()
}

func (s *sandbox) chartValuesPath() string { return filepath.Join(s.state, ChartValuesFile) }

// chartEnv are the env file's lines for installing the chart, once its
// values are written: the values file, the real nodes' containerd
// sockets and the ctr that imports into them. Called with envMu held.
func (s *sandbox) chartEnv() string {
	if len(s.nodeSockets) == 0 {
		return ""
	}
	sockets := strings.Join(s.nodeSockets, " ")
	return "# helm install " + helmRelease + " charts/stratus -n kube-system --values \"$STRATUS_CHART_VALUES\"\n" +
		"export STRATUS_CHART_VALUES=" + strconv.Quote(s.chartValuesPath()) + "\n" +
		"export STRATUS_REAL_NODE_SOCKETS=" + strconv.Quote(sockets) + "\n" +
		"export STRATUS_CTR=" + strconv.Quote(filepath.Join(s.o.BinDir, "ctr")) + "\n"
}
