package options

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/stratus-ccm/stratus/internal/controllers/nodelifecycle"
	"github.com/stratus-ccm/stratus/internal/ownership"
)

// SafetyOptions are the settings that bound what Stratus may destroy: the
// node deletion cap (docs/reliability.md, beside kube-controller-manager's
// eviction settings in docs/operations.md) and which Nodes are the
// provider's in a hybrid cluster.
type SafetyOptions struct {
	// CloudProviderPlatforms is KEP-5778's --cloud-provider-platforms: the
	// providerID prefixes this controller manager owns. Empty means the
	// provider's own list (ownership.PlatformLister), else every Node.
	CloudProviderPlatforms []string
	// ForeignNodeBackends keeps foreign Nodes in load balancers' backends.
	ForeignNodeBackends bool

	// NodeDeletionWindow, NodeDeletionMaxShare, NodeDeletionMaxZoneShare
	// and NodeDeletionMin are the lifecycle controller's DeletionCap.
	NodeDeletionWindow       time.Duration
	NodeDeletionMaxShare     float64
	NodeDeletionMaxZoneShare float64
	NodeDeletionMin          int
}

func newSafetyOptions() SafetyOptions {
	return SafetyOptions{
		NodeDeletionWindow:       nodelifecycle.DefaultDeletionWindow,
		NodeDeletionMaxShare:     nodelifecycle.DefaultMaxDeletionShare,
		NodeDeletionMaxZoneShare: nodelifecycle.DefaultMaxZoneDeletionShare,
		NodeDeletionMin:          nodelifecycle.DefaultMinDeletions,
	}
}

func (o *Options) addSafetyFlags(fs *pflag.FlagSet) {
	s := &o.Safety
	fs.StringSliceVar(&s.CloudProviderPlatforms, "cloud-provider-platforms", s.CloudProviderPlatforms,
		"Hybrid clusters: the platforms (providerID prefixes, as aws of aws:///zone/i-1) whose Nodes this controller manager owns; a Node without providerID names its platform in the annotation "+ownership.AnnotationPlatform+". Other Nodes are never initialized, tainted, deleted or routed. Empty: the provider's own list if it gives one, else every Node, as upstream.")
	fs.BoolVar(&s.ForeignNodeBackends, "load-balancer-foreign-node-backends", s.ForeignNodeBackends,
		"Hybrid clusters: keep Nodes of other platforms (--cloud-provider-platforms) among load balancers' backends, for a network that reaches them.")
	fs.DurationVar(&s.NodeDeletionWindow, "node-deletion-window", s.NodeDeletionWindow,
		"The window over which the node lifecycle controller's deletions are counted against --node-deletion-max-share and --node-deletion-max-zone-share.")
	fs.Float64Var(&s.NodeDeletionMaxShare, "node-deletion-max-share", s.NodeDeletionMaxShare,
		"At most this share (0 < s <= 1) of the cluster's Nodes are deleted within --node-deletion-window; further deletions wait, with a NodeDeletionCapped event. 1 lifts the cap.")
	fs.Float64Var(&s.NodeDeletionMaxZoneShare, "node-deletion-max-zone-share", s.NodeDeletionMaxZoneShare,
		"At most this share (0 < s <= 1) of one zone's Nodes are deleted within --node-deletion-window. 1 lifts the cap.")
	fs.IntVar(&s.NodeDeletionMin, "node-deletion-min-per-window", s.NodeDeletionMin,
		"Deletions allowed within --node-deletion-window whatever the shares, so that a small cluster still loses its dead Nodes.")
}

// validateSafety checks the safety settings, naming each bad flag and value.
func (o *Options) validateSafety() []error {
	s := o.Safety
	var errs []error
	bad := func(flag string, value any, why string) {
		errs = append(errs, fmt.Errorf("--%s=%v: %s", flag, value, why))
	}
	if s.NodeDeletionWindow <= 0 {
		bad("node-deletion-window", s.NodeDeletionWindow, "must be greater than 0")
	}
	if s.NodeDeletionMaxShare <= 0 || s.NodeDeletionMaxShare > 1 {
		bad("node-deletion-max-share", s.NodeDeletionMaxShare, "must be greater than 0 and at most 1")
	}
	if s.NodeDeletionMaxZoneShare <= 0 || s.NodeDeletionMaxZoneShare > 1 {
		bad("node-deletion-max-zone-share", s.NodeDeletionMaxZoneShare, "must be greater than 0 and at most 1")
	}
	if s.NodeDeletionMin < 1 {
		bad("node-deletion-min-per-window", s.NodeDeletionMin, "must be at least 1")
	}
	if _, err := ownership.New(s.CloudProviderPlatforms, nil); err != nil {
		errs = append(errs, err) // it names the flag and the value
	}
	return errs
}
