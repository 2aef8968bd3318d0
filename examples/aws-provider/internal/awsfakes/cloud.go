package awsfakes

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	awsv1 "k8s.io/cloud-provider-aws/pkg/providers/v1"
	"k8s.io/cloud-provider-aws/pkg/providers/v1/config"
	"k8s.io/cloud-provider-aws/pkg/providers/v1/iface"
)

// Region is the region AWS' fakes run in; they know no other.
const Region = "us-west-2"

// zones are the availability zones AWS' fake EC2 lists for Region.
func zones() []string { return []string{"us-west-2a", "us-west-2b", "us-west-2c"} }

// SelfInstanceID is the instance AWS' fakes say the provider runs on; it
// is tagged with the cluster by AWS' fakes themselves.
const SelfInstanceID = "i-self"

// New builds AWS' provider with awsv1.NewAWSCloud, the constructor AWS'
// own tests use, over AWS' fakes for the cluster clusterID: the provider
// finds its instances, load balancers and security groups by the tag
// kubernetes.io/cluster/<clusterID>, which the instances AddInstance adds
// carry. The provider is built as AWS' registered factory builds it from
// a cloud config that names the cluster ([Global] KubernetesClusterID),
// with its region and zone read from the (fake) instance metadata.
func New(clusterID string) (*Fakes, *awsv1.Cloud, error) {
	fake := awsv1.NewFakeAWSServices(clusterID)
	ctx := context.Background()
	// AWS' fake hands out its clients for any region; it knows us-west-2.
	ec2, err := fake.Compute(ctx, Region, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("awsfakes: fake EC2: %w", err)
	}
	elbClient, err := fake.LoadBalancing(ctx, Region, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("awsfakes: fake ELB: %w", err)
	}
	elbv2Client, err := fake.LoadBalancingV2(ctx, Region, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("awsfakes: fake ELBv2: %w", err)
	}
	f := &Fakes{
		clusterID: clusterID,
		fake:      fake,
		ec2:       ec2,
		elb:       elbClient,
		elbv2:     elbv2Client,
		states:    map[string]ec2types.InstanceStateName{},
		failAfter: -1,
	}
	if err := f.addNetwork(); err != nil {
		return nil, nil, err
	}
	var cfg config.CloudConfig
	cfg.Global.KubernetesClusterID = clusterID
	c, err := awsv1.NewAWSCloud(cfg, services{f})
	if err != nil {
		return nil, nil, fmt.Errorf("awsfakes: build AWS' provider: %w", err)
	}
	return f, c, nil
}

// services is awsv1.Services over AWS' fakes, handing out the wrapped
// EC2, ELB and ELBv2 clients; metadata and KMS are AWS' fakes as they are.
type services struct{ f *Fakes }

var _ awsv1.Services = services{}

func (s services) Compute(context.Context, string, *stscreds.AssumeRoleProvider) (iface.EC2, error) {
	return ec2API(s), nil
}

func (s services) LoadBalancing(context.Context, string, *stscreds.AssumeRoleProvider) (awsv1.ELB, error) {
	return elbAPI(s), nil
}

func (s services) LoadBalancingV2(context.Context, string, *stscreds.AssumeRoleProvider) (awsv1.ELBV2, error) {
	return elbv2API(s), nil
}

func (s services) Metadata(ctx context.Context) (config.EC2Metadata, error) {
	return s.f.fake.Metadata(ctx)
}

func (s services) KeyManagement(ctx context.Context, region string, creds *stscreds.AssumeRoleProvider) (awsv1.KMS, error) {
	return s.f.fake.KeyManagement(ctx, region, creds)
}

// addNetwork gives the cluster's VPC what AWS' own load balancer tests
// give it, through the fake EC2's own CreateSubnet and CreateRouteTable:
// one public subnet per zone, tagged for the cluster and for public load
// balancers, and a main route table, tagged for the cluster, whose
// default route goes to an internet gateway.
func (f *Fakes) addNetwork() error {
	fake, ok := f.ec2.(awsv1.FakeEC2)
	if !ok {
		return fmt.Errorf("awsfakes: AWS' fake EC2 is a %T, not an awsv1.FakeEC2", f.ec2)
	}
	tag := func(k, v string) ec2types.Tag { return ec2types.Tag{Key: aws.String(k), Value: aws.String(v)} }
	cluster := tag(awsv1.TagNameKubernetesClusterPrefix+f.clusterID, awsv1.ResourceLifecycleOwned)
	for i, zone := range zones() {
		subnet := &ec2types.Subnet{
			SubnetId:         aws.String(fmt.Sprintf("subnet-%08d", i+1)),
			AvailabilityZone: aws.String(zone),
			CidrBlock:        aws.String(fmt.Sprintf("10.0.%d.0/24", i+1)),
			Tags:             []ec2types.Tag{cluster, tag(awsv1.TagNameSubnetPublicELB, "1")},
		}
		if _, err := fake.CreateSubnet(subnet); err != nil {
			return fmt.Errorf("awsfakes: subnet in %s: %w", zone, err)
		}
	}
	_, err := fake.CreateRouteTable(&ec2types.RouteTable{
		RouteTableId: aws.String("rtb-00000001"),
		Associations: []ec2types.RouteTableAssociation{{Main: aws.Bool(true)}},
		Routes:       []ec2types.Route{{DestinationCidrBlock: aws.String("0.0.0.0/0"), GatewayId: aws.String("igw-00000001")}},
		Tags:         []ec2types.Tag{cluster},
	})
	if err != nil {
		return fmt.Errorf("awsfakes: route table: %w", err)
	}
	return nil
}
