package awsfakes

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	awsv1 "k8s.io/cloud-provider-aws/pkg/providers/v1"
	"k8s.io/cloud-provider-aws/pkg/providers/v1/iface"
)

// Instance is a machine the tests add to AWS' fake EC2.
type Instance struct {
	// ID is EC2's instance ID: "i-" and 8 or 17 hexadecimal digits.
	ID string
	// Zone is its availability zone: us-west-2a, -2b or -2c, the zones
	// AWS' fake knows.
	Zone string
	// Type is its instance type, such as m5.large.
	Type string
	// PrivateIP is the primary private address of its first network
	// interface.
	PrivateIP string
	// PublicIP, when set, is its public address.
	PublicIP string
}

// PrivateDNSName is the name EC2 gives the instance in us-west-2.
func (in Instance) PrivateDNSName() string {
	return "ip-" + strings.ReplaceAll(in.PrivateIP, ".", "-") + "." + Region + ".compute.internal"
}

// PublicDNSName is the public name EC2 gives the instance in us-west-2,
// empty without a public address.
func (in Instance) PublicDNSName() string {
	if in.PublicIP == "" {
		return ""
	}
	return "ec2-" + strings.ReplaceAll(in.PublicIP, ".", "-") + "." + Region + ".compute.amazonaws.com"
}

// stateCode is EC2's code for an instance state, and whether the state is
// one of EC2's.
func stateCode(state ec2types.InstanceStateName) (int32, bool) {
	switch state {
	case ec2types.InstanceStateNamePending:
		return 0, true
	case ec2types.InstanceStateNameRunning:
		return 16, true
	case ec2types.InstanceStateNameShuttingDown:
		return 32, true
	case ec2types.InstanceStateNameTerminated:
		return 48, true
	case ec2types.InstanceStateNameStopping:
		return 64, true
	case ec2types.InstanceStateNameStopped:
		return 80, true
	default:
		return 0, false
	}
}

// describe is the instance as EC2's DescribeInstances describes it in
// state, tagged as the cluster's. It is built afresh for every answer: the
// provider sorts an answer's network interfaces in place, so answers must
// share no slice. EC2 keeps listing a terminated instance for about an
// hour, without its network interfaces and addresses; a stopped one keeps
// its private address and loses its public one.
func (in Instance) describe(clusterID string, state ec2types.InstanceStateName) ec2types.Instance {
	code, _ := stateCode(state)
	out := ec2types.Instance{
		InstanceId:   aws.String(in.ID),
		InstanceType: ec2types.InstanceType(in.Type),
		Placement:    &ec2types.Placement{AvailabilityZone: aws.String(in.Zone)},
		State:        &ec2types.InstanceState{Name: state, Code: aws.Int32(code)},
		Tags: []ec2types.Tag{{
			Key:   aws.String(awsv1.TagNameKubernetesClusterPrefix + clusterID),
			Value: aws.String(awsv1.ResourceLifecycleOwned),
		}},
	}
	if state == ec2types.InstanceStateNameTerminated {
		return out
	}
	out.PrivateIpAddress = aws.String(in.PrivateIP)
	out.PrivateDnsName = aws.String(in.PrivateDNSName())
	out.NetworkInterfaces = []ec2types.InstanceNetworkInterface{{
		Attachment: &ec2types.InstanceNetworkInterfaceAttachment{DeviceIndex: aws.Int32(0)},
		Status:     ec2types.NetworkInterfaceStatusInUse,
		PrivateIpAddresses: []ec2types.InstancePrivateIpAddress{{
			Primary:          aws.Bool(true),
			PrivateIpAddress: aws.String(in.PrivateIP),
			PrivateDnsName:   aws.String(in.PrivateDNSName()),
		}},
	}}
	if in.PublicIP != "" && state != ec2types.InstanceStateNameStopped {
		out.PublicIpAddress = aws.String(in.PublicIP)
		out.PublicDnsName = aws.String(in.PublicDNSName())
	}
	return out
}

// AddInstance adds a running instance to AWS' fake EC2.
func (f *Fakes) AddInstance(in Instance) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.states[in.ID]; ok {
		return fmt.Errorf("awsfakes: instance %s added twice", in.ID)
	}
	if !slices.Contains(zones(), in.Zone) {
		return fmt.Errorf("awsfakes: instance %s in zone %q; AWS' fake EC2 knows only %v", in.ID, in.Zone, zones())
	}
	f.instances = append(f.instances, in)
	f.states[in.ID] = ec2types.InstanceStateNameRunning
	return nil
}

// SetState moves an added instance to state, as EC2 does when it is
// stopped, started or terminated.
func (f *Fakes) SetState(id string, state ec2types.InstanceStateName) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.states[id]; !ok {
		return fmt.Errorf("awsfakes: no instance %s", id)
	}
	if _, ok := stateCode(state); !ok {
		return fmt.Errorf("awsfakes: instance state %q is not EC2's", state)
	}
	f.states[id] = state
	return nil
}

// ec2API is AWS' fake EC2 with the tests' instances and every call
// serialized and subject to the injected faults.
type ec2API struct{ f *Fakes }

var _ iface.EC2 = ec2API{}

// describeAdded lists the added instances a DescribeInstances request
// asks for. The provider asks by instance ID, or for every instance
// (before it registers a load balancer's targets); a request with filters
// (a node looked up by its private DNS name) is refused rather than
// answered without the tests' instances: AWS' fake keeps its filter logic
// unexported, and a name-based lookup is not what these tests exercise
// (their Nodes are named by instance ID, as EKS' and kops' are). Called
// with f.mu held.
func (f *Fakes) describeAdded(req *ec2.DescribeInstancesInput) ([]ec2types.Instance, error) {
	if len(f.instances) == 0 {
		return nil, nil
	}
	if len(req.Filters) > 0 {
		return nil, fmt.Errorf("awsfakes: DescribeInstances with filters %v: the instances the tests added are listed by ID or all at once only", filterNames(req.Filters))
	}
	var out []ec2types.Instance
	for _, in := range f.instances {
		if len(req.InstanceIds) == 0 || slices.Contains(req.InstanceIds, in.ID) {
			out = append(out, in.describe(f.clusterID, f.states[in.ID]))
		}
	}
	return out, nil
}

func filterNames(filters []ec2types.Filter) []string {
	names := make([]string, 0, len(filters))
	for _, fl := range filters {
		names = append(names, aws.ToString(fl.Name))
	}
	return names
}

// DescribeInstances answers what AWS' fake answers (its own instance, the
// one the provider runs on) and the tests' instances.
func (e ec2API) DescribeInstances(ctx context.Context, req *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) ([]ec2types.Instance, error) {
	return call(e.f, serviceEC2, "DescribeInstances", func() ([]ec2types.Instance, error) {
		own, err := e.f.ec2.DescribeInstances(ctx, req, opts...)
		if err != nil {
			return nil, err
		}
		added, err := e.f.describeAdded(req)
		return append(own, added...), err
	})
}

// topologyFamilies are the instance families EC2 describes a network
// topology for (the provider's own default pattern for them).
var topologyFamilies = regexp.MustCompile(`^(hpc|trn|p)[0-9]+[a-z]*(-[a-z0-9]+)?(\.[0-9a-z]*)$`)

// DescribeInstanceTopology answers for the tests' instances, where AWS'
// fake panics "Not implemented". The provider calls it from every
// InstanceMetadata (for its topology.k8s.aws/network-node-layer-N labels)
// until EC2 has once answered nothing for an instance type. EC2 lists
// topology only for the families in topologyFamilies; for the others its
// answer is empty, which is what this returns. An instance of those
// families, or one the tests did not add, gets an error rather than a
// made-up topology.
func (e ec2API) DescribeInstanceTopology(_ context.Context, req *ec2.DescribeInstanceTopologyInput, _ ...func(*ec2.Options)) ([]ec2types.InstanceTopology, error) {
	return call(e.f, serviceEC2, "DescribeInstanceTopology", func() ([]ec2types.InstanceTopology, error) {
		for _, id := range req.InstanceIds {
			i := slices.IndexFunc(e.f.instances, func(in Instance) bool { return in.ID == id })
			switch {
			case i < 0:
				return nil, fmt.Errorf("awsfakes: DescribeInstanceTopology of %s, which the tests did not add", id)
			case topologyFamilies.MatchString(e.f.instances[i].Type):
				return nil, fmt.Errorf("awsfakes: instance %s is a %s, a family EC2 describes a topology for; the tests give it none", id, e.f.instances[i].Type)
			}
		}
		return nil, nil
	})
}

// The other calls go to AWS' fake as they are, serialized and subject to
// the injected faults.

func (e ec2API) DescribeSecurityGroups(ctx context.Context, req *ec2.DescribeSecurityGroupsInput, opts ...func(*ec2.Options)) ([]ec2types.SecurityGroup, error) {
	return call(e.f, serviceEC2, "DescribeSecurityGroups", func() ([]ec2types.SecurityGroup, error) {
		return e.f.ec2.DescribeSecurityGroups(ctx, req, opts...)
	})
}

func (e ec2API) CreateSecurityGroup(ctx context.Context, req *ec2.CreateSecurityGroupInput, opts ...func(*ec2.Options)) (*ec2.CreateSecurityGroupOutput, error) {
	return call(e.f, serviceEC2, "CreateSecurityGroup", func() (*ec2.CreateSecurityGroupOutput, error) {
		return e.f.ec2.CreateSecurityGroup(ctx, req, opts...)
	})
}

func (e ec2API) DeleteSecurityGroup(ctx context.Context, req *ec2.DeleteSecurityGroupInput, opts ...func(*ec2.Options)) (*ec2.DeleteSecurityGroupOutput, error) {
	return call(e.f, serviceEC2, "DeleteSecurityGroup", func() (*ec2.DeleteSecurityGroupOutput, error) {
		return e.f.ec2.DeleteSecurityGroup(ctx, req, opts...)
	})
}

func (e ec2API) AuthorizeSecurityGroupIngress(ctx context.Context, req *ec2.AuthorizeSecurityGroupIngressInput, opts ...func(*ec2.Options)) (*ec2.AuthorizeSecurityGroupIngressOutput, error) {
	return call(e.f, serviceEC2, "AuthorizeSecurityGroupIngress", func() (*ec2.AuthorizeSecurityGroupIngressOutput, error) {
		return e.f.ec2.AuthorizeSecurityGroupIngress(ctx, req, opts...)
	})
}

func (e ec2API) RevokeSecurityGroupIngress(ctx context.Context, req *ec2.RevokeSecurityGroupIngressInput, opts ...func(*ec2.Options)) (*ec2.RevokeSecurityGroupIngressOutput, error) {
	return call(e.f, serviceEC2, "RevokeSecurityGroupIngress", func() (*ec2.RevokeSecurityGroupIngressOutput, error) {
		return e.f.ec2.RevokeSecurityGroupIngress(ctx, req, opts...)
	})
}

func (e ec2API) DescribeSubnets(ctx context.Context, req *ec2.DescribeSubnetsInput, opts ...func(*ec2.Options)) ([]ec2types.Subnet, error) {
	return call(e.f, serviceEC2, "DescribeSubnets", func() ([]ec2types.Subnet, error) {
		return e.f.ec2.DescribeSubnets(ctx, req, opts...)
	})
}

func (e ec2API) DescribeAvailabilityZones(ctx context.Context, req *ec2.DescribeAvailabilityZonesInput, opts ...func(*ec2.Options)) ([]ec2types.AvailabilityZone, error) {
	return call(e.f, serviceEC2, "DescribeAvailabilityZones", func() ([]ec2types.AvailabilityZone, error) {
		return e.f.ec2.DescribeAvailabilityZones(ctx, req, opts...)
	})
}

func (e ec2API) CreateTags(ctx context.Context, req *ec2.CreateTagsInput, opts ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	return call(e.f, serviceEC2, "CreateTags", func() (*ec2.CreateTagsOutput, error) {
		return e.f.ec2.CreateTags(ctx, req, opts...)
	})
}

func (e ec2API) DeleteTags(ctx context.Context, req *ec2.DeleteTagsInput, opts ...func(*ec2.Options)) (*ec2.DeleteTagsOutput, error) {
	return call(e.f, serviceEC2, "DeleteTags", func() (*ec2.DeleteTagsOutput, error) {
		return e.f.ec2.DeleteTags(ctx, req, opts...)
	})
}

func (e ec2API) DescribeRouteTables(ctx context.Context, req *ec2.DescribeRouteTablesInput, opts ...func(*ec2.Options)) ([]ec2types.RouteTable, error) {
	return call(e.f, serviceEC2, "DescribeRouteTables", func() ([]ec2types.RouteTable, error) {
		return e.f.ec2.DescribeRouteTables(ctx, req, opts...)
	})
}

func (e ec2API) CreateRoute(ctx context.Context, req *ec2.CreateRouteInput, opts ...func(*ec2.Options)) (*ec2.CreateRouteOutput, error) {
	return call(e.f, serviceEC2, "CreateRoute", func() (*ec2.CreateRouteOutput, error) {
		return e.f.ec2.CreateRoute(ctx, req, opts...)
	})
}

func (e ec2API) DeleteRoute(ctx context.Context, req *ec2.DeleteRouteInput, opts ...func(*ec2.Options)) (*ec2.DeleteRouteOutput, error) {
	return call(e.f, serviceEC2, "DeleteRoute", func() (*ec2.DeleteRouteOutput, error) {
		return e.f.ec2.DeleteRoute(ctx, req, opts...)
	})
}

func (e ec2API) ModifyInstanceAttribute(ctx context.Context, req *ec2.ModifyInstanceAttributeInput, opts ...func(*ec2.Options)) (*ec2.ModifyInstanceAttributeOutput, error) {
	return call(e.f, serviceEC2, "ModifyInstanceAttribute", func() (*ec2.ModifyInstanceAttributeOutput, error) {
		return e.f.ec2.ModifyInstanceAttribute(ctx, req, opts...)
	})
}

func (e ec2API) DescribeVpcs(ctx context.Context, req *ec2.DescribeVpcsInput, opts ...func(*ec2.Options)) (*ec2.DescribeVpcsOutput, error) {
	return call(e.f, serviceEC2, "DescribeVpcs", func() (*ec2.DescribeVpcsOutput, error) {
		return e.f.ec2.DescribeVpcs(ctx, req, opts...)
	})
}

func (e ec2API) DescribeNetworkInterfaces(ctx context.Context, req *ec2.DescribeNetworkInterfacesInput, opts ...func(*ec2.Options)) (*ec2.DescribeNetworkInterfacesOutput, error) {
	return call(e.f, serviceEC2, "DescribeNetworkInterfaces", func() (*ec2.DescribeNetworkInterfacesOutput, error) {
		return e.f.ec2.DescribeNetworkInterfaces(ctx, req, opts...)
	})
}
