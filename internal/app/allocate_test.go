package app

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
)

// TestAllocateNodeCIDRsWithoutIPAMSaysSo: upstream's manager has no node
// IPAM and takes --allocate-node-cidrs=true without a word; Stratus says
// once at start that the flag does nothing unless --controllers names node
// IPAM, and how to name it. Nothing is said when node IPAM runs or the
// flag is off.
func TestAllocateNodeCIDRsWithoutIPAMSaysSo(t *testing.T) {
	const hint = "--controllers=*,node-ipam-controller"
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--allocate-node-cidrs=true"}, 1},
		// hcloud's published networks manifest: kube-controller-manager
		// allocates, with the same --cluster-cidr.
		{[]string{"--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16", "--configure-cloud-routes=true"}, 1},
		{[]string{"--allocate-node-cidrs=true", "--controllers=*,-node-ipam-controller"}, 1},
		{[]string{"--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16", "--controllers=*,node-ipam-controller"}, 0},
		{[]string{"--allocate-node-cidrs=false"}, 0},
	} {
		o, err := parse(t, append([]string{"--cloud-provider=x"}, c.args...)...)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		var lines []string
		ctx := klog.NewContext(context.Background(), funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}))
		if _, err := plan(ctx, o, Deps{}); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		var said []string
		for _, l := range lines {
			if strings.Contains(l, "--allocate-node-cidrs") {
				said = append(said, l)
			}
		}
		if len(said) != c.want || c.want == 1 && (!strings.Contains(said[0], hint) || !strings.Contains(said[0], `"level"=0`)) {
			t.Errorf("%v: logged %q, want %d info line(s) naming %s", c.args, said, c.want, hint)
		}
	}
}
