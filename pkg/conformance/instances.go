package conformance

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

func instanceChecks() []check {
	return []check{
		{
			name:  "ExistingInstancesExist",
			why:   "the lifecycle controller deletes a NotReady Node whose instance does not exist; a false answer for a running machine deletes a live Node.",
			needs: (*suite).needInstances,
			test:  testExistingInstancesExist,
		},
		{
			name:  "MetadataOfExistingInstances",
			why:   "the node controller initializes a Node from this answer: without a providerID in the provider's own form and an address, the Node stays tainted uninitialized; InstanceNotFound for it reads as a machine that is gone.",
			needs: (*suite).needInstances,
			test:  testMetadataOfExistingInstances,
		},
		{
			name:  "MetadataIsStable",
			why:   "the node controller refreshes addresses and labels periodically and writes whatever differs: answers that change between calls (order of addresses included) rewrite Nodes for nothing and flap their labels.",
			needs: (*suite).needInstances,
			test:  testMetadataIsStable,
		},
		{
			name:  "GoneInstancesDoNotExist",
			why:   "a Node whose machine is gone is deleted only when InstanceExists answers false without an error; otherwise it stays NotReady forever.",
			needs: (*suite).needGone,
			test:  testGoneInstancesDoNotExist,
		},
		{
			name:  "GoneInstanceMetadataIsInstanceNotFound",
			why:   "the node controller tells a machine that is gone from a failing cloud by errors.Is(err, cloudprovider.InstanceNotFound); an error that hides it (stringified, or wrapped without %w) reads as a cloud failure and is retried forever.",
			needs: (*suite).needGone,
			test:  testGoneInstanceMetadataIsInstanceNotFound,
		},
		{
			name: "ListerAgreesWithPerInstanceCalls",
			why:  "with the InstanceLister extension the node controllers read every Node from one list instead of one call per Node; a list that disagrees with InstanceMetadata, InstanceExists or InstanceShutdown gives Nodes other metadata, or deletes or taints them wrongly.",
			needs: func(s *suite) string {
				if s.instLister == nil {
					return "the provider does not implement cloud.InstanceLister"
				}
				if len(s.cfg.Instances) == 0 && len(s.cfg.Gone) == 0 {
					return "Config.Instances and Config.Gone are empty"
				}
				return s.needInstancesOrGone()
			},
			test: testInstanceLister,
		},
	}
}

func (s *suite) needInstancesOrGone() string {
	if s.instances == nil {
		return "the provider implements neither InstancesV2 nor Instances"
	}
	return ""
}

// validMetadata checks what the node controller requires of metadata for
// a Node (which may already carry a providerID).
func (s *suite) validMetadata(ctx context.Context, n *corev1.Node, md *cloudprovider.InstanceMetadata) error {
	if md == nil {
		return fmt.Errorf("InstanceMetadata(%s) returned nil metadata and no error", n.Name)
	}
	if n.Spec.ProviderID == "" {
		prefix := s.cfg.Provider.ProviderName() + "://"
		switch {
		case md.ProviderID == "" && s.legacy && s.instanceIDNotImplemented(ctx, n):
			// A legacy provider without instance IDs: upstream, and
			// Stratus, initialize such Nodes without a providerID.
		case !strings.HasPrefix(md.ProviderID, prefix) || len(md.ProviderID) == len(prefix):
			return fmt.Errorf("InstanceMetadata(%s).ProviderID = %q, want %q followed by the instance's ID", n.Name, md.ProviderID, prefix)
		}
	}
	if len(md.NodeAddresses) == 0 {
		return fmt.Errorf("InstanceMetadata(%s) has no addresses", n.Name)
	}
	return nil
}

func (s *suite) instanceIDNotImplemented(ctx context.Context, n *corev1.Node) bool {
	in, ok := s.cfg.Provider.Instances()
	if !ok {
		return false
	}
	_, err := in.InstanceID(ctx, nodeName(n))
	return errors.Is(err, cloudprovider.NotImplemented)
}

// testInstanceLister compares one ListInstances answer with the
// per-instance calls for every configured Node.
func testInstanceLister(ctx context.Context, s *suite) error {
	list, err := s.instLister.ListInstances(ctx)
	if err != nil {
		return fmt.Errorf("ListInstances: %w", err)
	}
	idx := cloud.NewInstanceIndex(list)
	var errs []error
	for _, n := range s.cfg.Instances {
		inst, ok, err := idx.Lookup(n)
		if err != nil || !ok {
			errs = append(errs, fmt.Errorf("node %s (machine exists) is not in ListInstances' answer (lookup error: %w)", n.Name, err))
			continue
		}
		errs = append(errs, agrees(ctx, s, n, inst))
	}
	for _, n := range s.cfg.Gone {
		if _, ok, _ := idx.Lookup(n); ok {
			errs = append(errs, fmt.Errorf("node %s (machine gone) is in ListInstances' answer", n.Name))
		}
	}
	return errors.Join(errs...)
}

func agrees(ctx context.Context, s *suite, n *corev1.Node, inst *cloud.Instance) error {
	md, err := s.instances.InstanceMetadata(ctx, n)
	if err != nil {
		return fmt.Errorf("InstanceMetadata(%s): %w", n.Name, err)
	}
	listed := inst.Metadata
	if listed.ProviderID == "" {
		listed.ProviderID = inst.ProviderID
	}
	if !reflect.DeepEqual(&listed, md) {
		return fmt.Errorf("node %s: ListInstances says %+v, InstanceMetadata says %+v", n.Name, listed, *md)
	}
	shutdown, err := s.instances.InstanceShutdown(ctx, n)
	if err != nil {
		return fmt.Errorf("InstanceShutdown(%s): %w", n.Name, err)
	}
	if shutdown != inst.Shutdown {
		return fmt.Errorf("node %s: ListInstances says shutdown=%v, InstanceShutdown says %v", n.Name, inst.Shutdown, shutdown)
	}
	return nil
}

func eachNode(nodes []*corev1.Node, f func(*corev1.Node) error) error {
	var errs []error
	for _, n := range nodes {
		errs = append(errs, f(n))
	}
	return errors.Join(errs...)
}

func testExistingInstancesExist(ctx context.Context, s *suite) error {
	return eachNode(s.cfg.Instances, func(n *corev1.Node) error {
		ok, err := s.instances.InstanceExists(ctx, n)
		switch {
		case errors.Is(err, cloudprovider.NotImplemented):
			// A provider that cannot tell (a legacy one without instance
			// IDs): the lifecycle controller leaves the Node alone, which
			// is safe. GoneInstancesDoNotExist shows what it costs.
			return nil
		case err != nil:
			return fmt.Errorf("InstanceExists(%s) failed for an existing machine: %w", n.Name, err)
		case !ok:
			return fmt.Errorf("InstanceExists(%s) = false for a machine that exists", n.Name)
		}
		return nil
	})
}

func testMetadataOfExistingInstances(ctx context.Context, s *suite) error {
	return eachNode(s.cfg.Instances, func(n *corev1.Node) error {
		md, err := s.instances.InstanceMetadata(ctx, n)
		if err != nil {
			return fmt.Errorf("InstanceMetadata(%s) failed for an existing machine: %w", n.Name, err)
		}
		return s.validMetadata(ctx, n, md)
	})
}

func testMetadataIsStable(ctx context.Context, s *suite) error {
	return eachNode(s.cfg.Instances, func(n *corev1.Node) error {
		first, err := s.instances.InstanceMetadata(ctx, n)
		if err != nil {
			return fmt.Errorf("InstanceMetadata(%s): %w", n.Name, err)
		}
		for range 2 {
			again, err := s.instances.InstanceMetadata(ctx, n)
			if err != nil {
				return fmt.Errorf("InstanceMetadata(%s) again: %w", n.Name, err)
			}
			if !reflect.DeepEqual(first, again) {
				return fmt.Errorf("InstanceMetadata(%s) changed between calls: %+v, then %+v", n.Name, *first, *again)
			}
		}
		return nil
	})
}

func testGoneInstancesDoNotExist(ctx context.Context, s *suite) error {
	return eachNode(s.cfg.Gone, func(n *corev1.Node) error {
		ok, err := s.instances.InstanceExists(ctx, n)
		switch {
		case err != nil:
			return fmt.Errorf("InstanceExists(%s) of a gone machine failed instead of answering false: %w", n.Name, err)
		case ok:
			return fmt.Errorf("InstanceExists(%s) = true for a machine that does not exist", n.Name)
		}
		return nil
	})
}

func testGoneInstanceMetadataIsInstanceNotFound(ctx context.Context, s *suite) error {
	return eachNode(s.cfg.Gone, func(n *corev1.Node) error {
		md, err := s.instances.InstanceMetadata(ctx, n)
		switch {
		case err == nil:
			return fmt.Errorf("InstanceMetadata(%s) of a gone machine succeeded: %+v", n.Name, md)
		case !errors.Is(err, cloudprovider.InstanceNotFound):
			return fmt.Errorf("InstanceMetadata(%s) of a gone machine: errors.Is(err, cloudprovider.InstanceNotFound) is false for %w", n.Name, err)
		}
		return nil
	})
}
