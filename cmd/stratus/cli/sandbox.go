package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/sandbox"
)

func newSandboxCommand() *cobra.Command {
	o := sandbox.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run the whole system on this machine: etcd, kube-apiserver, localcloud, kwok nodes and Stratus",
		Long: `Brings up, as real processes on loopback, etcd and kube-apiserver, localcloud with
instances spread over zones, a node for each running instance (registered as an
external-cloud kubelet registers it; kwok sends its heartbeats), a node-port
responder standing in for kube-proxy and pods, and the Stratus controller
manager with every controller on; then the demo Services "hello" and
"hello-local" (externalTrafficPolicy Local) of type LoadBalancer. Writes
STATE_DIR/env once the cluster is up and STATE_DIR/ready once nodes are
initialized and the demo answers. Children that exit are
restarted; one that keeps failing stops the sandbox with its last log lines.
Ctrl-C or SIGTERM stops everything; the same --state-dir resumes the cluster.

Nodes follow instances, as kubelets follow their machines (the env file puts
this stratus first on the PATH):
  source STATE_DIR/env
  stratus localcloud instances create node-0042   # a new node, initialized by Stratus
  stratus localcloud instances stop node-0002     # NotReady after the grace period, then tainted shutdown
  stratus localcloud instances delete node-0003   # NotReady after the grace period, then deleted by Stratus

Faults, kept in localcloud's state across restarts:
  stratus localcloud config set errorRate=0.2 latency=100ms
  stratus localcloud config get

Metrics and health of the controller manager (the env file holds a token,
renewed at every start):
  ` + sandbox.MetricsCurl + `
  curl -sk -H "Authorization: Bearer $STRATUS_METRICS_TOKEN" "$STRATUS_CCM_URL/readyz"

Your own controller manager: stratus sandbox --no-ccm, then
  stratus controller-manager $STRATUS_CCM_FLAGS`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := klog.NewContext(cmd.Context(), klog.Background())
			// Only the knob flags given reach localcloud, which keeps
			// the others from earlier runs and `localcloud config set`.
			o.KnobsSet = map[string]bool{}
			for _, f := range sandbox.KnobFlags() {
				o.KnobsSet[f] = cmd.Flags().Changed(f)
			}
			return sandbox.Run(ctx, o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.StateDir, "state-dir", o.StateDir, "Where etcd's and localcloud's data, logs, the kubeconfig and the env file live")
	f.StringVar(&o.BinDir, "bin-dir", o.BinDir, "Directory holding kube-apiserver, etcd and kwok (default: the stratus binary's directory)")
	f.IntVar(&o.Nodes, "nodes", o.Nodes, "Number of nodes (instances) to run")
	f.IntVar(&o.Zones, "zones", o.Zones, "Number of zones the instances are spread over")
	f.IntVar(&o.RealNodes, "real-nodes", o.RealNodes, "Number of real nodes (kubelet, containerd, kube-proxy in network namespaces; needs root) beside the kwok ones; -1: as many as fit comfortably (2 to 4) when root and the node programs are there, else none")
	f.StringArrayVar(&o.RealNodeImages, "real-node-image", nil, "An image tarball every real node imports besides those in <bin-dir>/images (repeatable)")
	f.BoolVar(&o.NoDemo, "no-demo", o.NoDemo, "Do not create the demo Services hello and hello-local")
	f.BoolVar(&o.NoCCM, "no-ccm", o.NoCCM, "Do not run the controller manager: run your own with stratus controller-manager $STRATUS_CCM_FLAGS (from the env file)")
	f.DurationVar(&o.Latency, "latency", o.Latency, "localcloud: added latency per API call")
	f.Float64Var(&o.RateLimit, "rate-limit", o.RateLimit, "localcloud: API requests per second before 429s (0 = unlimited)")
	f.IntVar(&o.RateBurst, "rate-burst", o.RateBurst, "localcloud: burst of the rate limit")
	f.Float64Var(&o.ErrorRate, "error-rate", o.ErrorRate, "localcloud: fraction of API calls answered 503 (0-1)")
	f.DurationVar(&o.LBProvisioningTime, "lb-provisioning-time", o.LBProvisioningTime, "localcloud: time a load balancer spends provisioning")
	f.DurationVar(&o.LBDeletionTime, "lb-deletion-time", o.LBDeletionTime, "localcloud: time a load balancer spends deleting")
	f.StringVar(&o.IPFamily, "ip-family", o.IPFamily, "the cluster's IP family: ipv4, or dual (IPv6 beside IPv4: Services, pod CIDRs, nodes, load balancers); empty: dual with real nodes only (--nodes=0), ipv4 otherwise")
	f.StringVar(&o.VIPPool, "vip-pool", o.VIPPool, "localcloud: CIDR for load balancer VIPs (default 127.0.100.0/24; give each sandbox on a machine its own)")
	f.StringVar(&o.InternalPool, "internal-pool", o.InternalPool, "localcloud: CIDR for instance internal addresses (default 127.1.0.0/16)")
	f.StringVar(&o.ExternalPool, "external-pool", o.ExternalPool, "localcloud: CIDR for instance external addresses (default 127.2.0.0/16)")
	f.IntVar(&o.APIServerPort, "apiserver-port", o.APIServerPort, "kube-apiserver port on 127.0.0.1")
	f.IntVar(&o.EtcdPort, "etcd-port", o.EtcdPort, "etcd client port on 127.0.0.1")
	f.IntVar(&o.LocalcloudPort, "localcloud-port", o.LocalcloudPort, "localcloud API port, on 127.0.0.1 (with real nodes: on the machine's address on their bridge, which their pods reach too)")
	f.IntVar(&o.CCMPort, "ccm-port", o.CCMPort, "Stratus' secure port (health and metrics) on 127.0.0.1")
	f.StringVar(&o.ClusterCIDR, "cluster-cidr", o.ClusterCIDR, "Pod CIDR(s) the node IPAM controller allocates from")
	f.DurationVar(&o.NodeMonitorPeriod, "node-monitor-period", o.NodeMonitorPeriod, "How often nodes are checked for a kubelet gone silent (kube-controller-manager's flag and default)")
	f.DurationVar(&o.NodeMonitorGracePeriod, "node-monitor-grace-period", o.NodeMonitorGracePeriod, "How long a node's kubelet may be silent (its machine stopped or deleted) before the node is marked Unknown (kube-controller-manager's flag and default)")
	f.DurationVar(&o.ReadyTimeout, "ready-timeout", o.ReadyTimeout, "How long to wait for nodes and the demo before giving up")
	f.StringArrayVar(&o.CCMArgs, "ccm-arg", o.CCMArgs, "Extra flag for the controller manager (repeatable), e.g. --ccm-arg=--v=4")
	return cmd
}
