package realnode

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// With a cluster DNS the kubelet's configuration gives pods its address
// and the cluster domain; without, it names neither, so that pods get no
// resolver rather than one that does not exist.
func TestKubeletConfigClusterDNS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		dns        netip.Addr
		domain     string
		wantDNS    []any
		wantDomain any
	}{
		{name: "none"},
		{name: "default domain", dns: netip.MustParseAddr("10.0.0.10"), wantDNS: []any{"10.0.0.10"}, wantDomain: "cluster.local"},
		{name: "own domain", dns: netip.MustParseAddr("10.0.0.10"), domain: "example.internal", wantDNS: []any{"10.0.0.10"}, wantDomain: "example.internal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &Cluster{cfg: Config{ClusterDNS: tc.dns, ClusterDomain: tc.domain}, slot: &slot{index: 7}}
			c.cfg.defaultDNS()
			path := filepath.Join(t.TempDir(), "kubelet.yaml")
			n := &Node{Name: "n", IP: netip.MustParseAddr("10.250.0.10"), cluster: c, paths: nodePaths{dir: t.TempDir()}}
			if err := writeTemplate(kubeletYAML, path, c.nodeConfigValues(n)); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := yaml.Unmarshal(raw, &got); err != nil {
				t.Fatalf("kubelet.yaml is not YAML: %v\n%s", err, raw)
			}
			if dns, ok := got["clusterDNS"]; (tc.wantDNS == nil) == ok || (ok && !equalList(dns, tc.wantDNS)) {
				t.Errorf("clusterDNS = %v, want %v\n%s", dns, tc.wantDNS, raw)
			}
			if got["clusterDomain"] != tc.wantDomain {
				t.Errorf("clusterDomain = %v, want %v", got["clusterDomain"], tc.wantDomain)
			}
			if !strings.Contains(string(raw), `resolvConf: ""`) {
				t.Errorf("the machine's resolv.conf would reach pods:\n%s", raw)
			}
		})
	}
}

func equalList(got any, want []any) bool {
	l, ok := got.([]any)
	if !ok || len(l) != len(want) {
		return false
	}
	for i := range l {
		if l[i] != want[i] {
			return false
		}
	}
	return true
}
