package realnode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// SandboxImage is the pods' sandbox ("pause") image, imported into every
// node from BinDir/images/pause.tar.
const SandboxImage = "stratus.local/pause:v1"

// nodePaths are a node's files and directories, all under its directory
// so that the slot's cleanup finds every mount and process by path.
type nodePaths struct {
	dir string
}

func (p nodePaths) join(elem ...string) string {
	return filepath.Join(append([]string{p.dir}, elem...)...)
}
func (p nodePaths) containerdConfig() string  { return p.join("containerd.toml") }
func (p nodePaths) containerdSocket() string  { return p.join("containerd.sock") }
func (p nodePaths) cniConfDir() string        { return p.join("cni", "net.d") }
func (p nodePaths) cniTemplate() string       { return p.join("cni", "template.json") }
func (p nodePaths) kubeletConfig() string     { return p.join("kubelet.yaml") }
func (p nodePaths) kubeletKubeconfig() string { return p.join("kubelet.kubeconfig") }
func (p nodePaths) proxyConfig() string       { return p.join("kube-proxy.yaml") }
func (p nodePaths) proxyKubeconfig() string   { return p.join("kube-proxy.kubeconfig") }
func (p nodePaths) log(name string) string    { return p.join("log", name+".log") }

// containerdTOML is containerd 2's configuration for one node: its own
// root, state, socket and runc root so that several run side by side;
// restrict_oom_score_adj because the machine's root may lack
// CAP_SYS_RESOURCE (without it every pod sandbox fails with "can't get
// final child's PID from pipe: EOF"); the CNI configuration is rendered by
// containerd from the template once the kubelet hands it the node's pod
// CIDR, which is what the cluster's IPAM allocated.
var containerdTOML = template.Must(template.New("containerd").Parse(`version = 3
root = "{{.Dir}}/containerd/root"
state = "{{.Dir}}/containerd/state"

[grpc]
  address = "{{.Socket}}"
[ttrpc]
  address = "{{.Socket}}.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "{{.Runc}}"
        Root = "{{.Dir}}/runc"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["{{.CNIBin}}"]
    conf_dir = "{{.CNIConfDir}}"
    conf_template = "{{.CNITemplate}}"

[plugins."io.containerd.cri.v1.images"]
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{{.SandboxImage}}"
`))

// cniTemplate is the pods' network inside a node's namespace: a bridge
// with the node's pod CIDRs (one per family in a dual-stack slot; the
// default route of each family is containerd's Routes); pods route
// everything through it, and the
// node's namespace routes other nodes' pod CIDRs as the cloud's route
// table says. No masquerading: pod addresses are seen as they are.
var cniTemplate = template.Must(template.New("cni").Delims("[[", "]]").Parse(`{
  "cniVersion": "1.0.0",
  "name": "stratus",
  "plugins": [{
    "type": "bridge",
    "bridge": "cni0",
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "dataDir": "[[.Dir]]/cni/ipam",
      "ranges": [{{range $i, $r := .PodCIDRRanges}}{{if $i}}, {{end}}[{"subnet": "{{$r}}"}]{{end}}],
      "routes": [{{range $i, $r := .Routes}}{{if $i}}, {{end}}{"dst": "{{$r}}"}{{end}}]
    }
  }, {
    "type": "portmap",
    "capabilities": {"portMappings": true}
  }]
}
`))

// kubeletYAML: cgroupfs under a cgroup of the slot's (this machine has
// no systemd and may have cgroup v1, hence failCgroupV1: false), serving
// on the node's address only, no eviction (a busy shared disk must not
// evict the cluster's pods), no swap check; with a cluster DNS, pods of
// dnsPolicy ClusterFirst get its address and the cluster domain's search
// list in their resolv.conf, as in any cluster (resolvConf "" keeps the
// machine's own resolvers out of every pod).
var kubeletYAML = template.Must(template.New("kubelet").Parse(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {{.NodeIP}}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
containerRuntimeEndpoint: unix://{{.Socket}}
cgroupDriver: cgroupfs
cgroupRoot: {{.CgroupRoot}}
failCgroupV1: false
failSwapOn: false
resolvConf: ""
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
evictionHard:
  memory.available: "0%"
  nodefs.available: "0%"
  nodefs.inodesFree: "0%"
  imagefs.available: "0%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
maxPods: 110
podLogsDir: {{.Dir}}/pod-logs
{{- if .LeaseSeconds}}
nodeLeaseDurationSeconds: {{.LeaseSeconds}}
{{- end}}
{{- if .ClusterDNS}}
clusterDNS: [{{.ClusterDNS}}]
clusterDomain: {{.ClusterDomain}}
{{- end}}
serializeImagePulls: false
`))

// kubeProxyYAML: kube-proxy programs the node's namespace only; every
// conntrack setting zero leaves the machine-wide conntrack table size
// and timeouts as they are. Pods' traffic is what arrives from the CNI
// bridge: kube-proxy sends pods' connections to a load balancer's IP to
// every endpoint, as it must for externalTrafficPolicy Local, where
// traffic from outside goes only to local endpoints.
var kubeProxyYAML = template.Must(template.New("kube-proxy").Parse(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: {{.Kubeconfig}}
hostnameOverride: {{.Name}}
mode: {{.Mode}}
detectLocalMode: BridgeInterface
detectLocal:
  bridgeInterface: cni0
healthzBindAddress: 0.0.0.0:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`))

type configValues struct {
	Dir, Socket, Runc, CNIBin, CNIConfDir, CNITemplate, SandboxImage string
	NodeIP, CgroupRoot, Kubeconfig, Name, Mode                       string
	ClusterDNS, ClusterDomain                                        string
	LeaseSeconds                                                     int
}

func writeTemplate(t *template.Template, path string, v any) error {
	var b strings.Builder
	if err := t.Execute(&b, v); err != nil {
		return fmt.Errorf("render %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
