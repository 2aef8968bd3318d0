package awsfakes

import (
	"context"

	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	awsv1 "k8s.io/cloud-provider-aws/pkg/providers/v1"
)

// elbAPI and elbv2API are AWS' fake ELB (classic load balancers) and
// ELBv2 (network load balancers) as they are, every call serialized with
// the EC2 calls and subject to the injected faults, so that a fault armed
// during EnsureLoadBalancer hits the load balancer calls as it would on
// AWS. AWS' fakes keep no load balancer state, and most of their calls
// panic "Not implemented" (all of ELBv2's writes): the wrappers leave that
// as it is.
type (
	elbAPI   struct{ f *Fakes }
	elbv2API struct{ f *Fakes }
)

var (
	_ awsv1.ELB   = elbAPI{}
	_ awsv1.ELBV2 = elbv2API{}
)

func (a elbAPI) CreateLoadBalancer(ctx context.Context, req *elb.CreateLoadBalancerInput, opts ...func(*elb.Options)) (*elb.CreateLoadBalancerOutput, error) {
	return call(a.f, serviceELB, "CreateLoadBalancer", func() (*elb.CreateLoadBalancerOutput, error) {
		return a.f.elb.CreateLoadBalancer(ctx, req, opts...)
	})
}

func (a elbAPI) DeleteLoadBalancer(ctx context.Context, req *elb.DeleteLoadBalancerInput, opts ...func(*elb.Options)) (*elb.DeleteLoadBalancerOutput, error) {
	return call(a.f, serviceELB, "DeleteLoadBalancer", func() (*elb.DeleteLoadBalancerOutput, error) {
		return a.f.elb.DeleteLoadBalancer(ctx, req, opts...)
	})
}

func (a elbAPI) DescribeLoadBalancers(ctx context.Context, req *elb.DescribeLoadBalancersInput, opts ...func(*elb.Options)) (*elb.DescribeLoadBalancersOutput, error) {
	return call(a.f, serviceELB, "DescribeLoadBalancers", func() (*elb.DescribeLoadBalancersOutput, error) {
		return a.f.elb.DescribeLoadBalancers(ctx, req, opts...)
	})
}

func (a elbAPI) AddTags(ctx context.Context, req *elb.AddTagsInput, opts ...func(*elb.Options)) (*elb.AddTagsOutput, error) {
	return call(a.f, serviceELB, "AddTags", func() (*elb.AddTagsOutput, error) {
		return a.f.elb.AddTags(ctx, req, opts...)
	})
}

func (a elbAPI) RegisterInstancesWithLoadBalancer(ctx context.Context, req *elb.RegisterInstancesWithLoadBalancerInput, opts ...func(*elb.Options)) (*elb.RegisterInstancesWithLoadBalancerOutput, error) {
	return call(a.f, serviceELB, "RegisterInstancesWithLoadBalancer", func() (*elb.RegisterInstancesWithLoadBalancerOutput, error) {
		return a.f.elb.RegisterInstancesWithLoadBalancer(ctx, req, opts...)
	})
}

func (a elbAPI) DeregisterInstancesFromLoadBalancer(ctx context.Context, req *elb.DeregisterInstancesFromLoadBalancerInput, opts ...func(*elb.Options)) (*elb.DeregisterInstancesFromLoadBalancerOutput, error) {
	return call(a.f, serviceELB, "DeregisterInstancesFromLoadBalancer", func() (*elb.DeregisterInstancesFromLoadBalancerOutput, error) {
		return a.f.elb.DeregisterInstancesFromLoadBalancer(ctx, req, opts...)
	})
}

func (a elbAPI) CreateLoadBalancerPolicy(ctx context.Context, req *elb.CreateLoadBalancerPolicyInput, opts ...func(*elb.Options)) (*elb.CreateLoadBalancerPolicyOutput, error) {
	return call(a.f, serviceELB, "CreateLoadBalancerPolicy", func() (*elb.CreateLoadBalancerPolicyOutput, error) {
		return a.f.elb.CreateLoadBalancerPolicy(ctx, req, opts...)
	})
}

func (a elbAPI) SetLoadBalancerPoliciesForBackendServer(ctx context.Context, req *elb.SetLoadBalancerPoliciesForBackendServerInput, opts ...func(*elb.Options)) (*elb.SetLoadBalancerPoliciesForBackendServerOutput, error) {
	return call(a.f, serviceELB, "SetLoadBalancerPoliciesForBackendServer", func() (*elb.SetLoadBalancerPoliciesForBackendServerOutput, error) {
		return a.f.elb.SetLoadBalancerPoliciesForBackendServer(ctx, req, opts...)
	})
}

func (a elbAPI) SetLoadBalancerPoliciesOfListener(ctx context.Context, req *elb.SetLoadBalancerPoliciesOfListenerInput, opts ...func(*elb.Options)) (*elb.SetLoadBalancerPoliciesOfListenerOutput, error) {
	return call(a.f, serviceELB, "SetLoadBalancerPoliciesOfListener", func() (*elb.SetLoadBalancerPoliciesOfListenerOutput, error) {
		return a.f.elb.SetLoadBalancerPoliciesOfListener(ctx, req, opts...)
	})
}

func (a elbAPI) DescribeLoadBalancerPolicies(ctx context.Context, req *elb.DescribeLoadBalancerPoliciesInput, opts ...func(*elb.Options)) (*elb.DescribeLoadBalancerPoliciesOutput, error) {
	return call(a.f, serviceELB, "DescribeLoadBalancerPolicies", func() (*elb.DescribeLoadBalancerPoliciesOutput, error) {
		return a.f.elb.DescribeLoadBalancerPolicies(ctx, req, opts...)
	})
}

func (a elbAPI) DetachLoadBalancerFromSubnets(ctx context.Context, req *elb.DetachLoadBalancerFromSubnetsInput, opts ...func(*elb.Options)) (*elb.DetachLoadBalancerFromSubnetsOutput, error) {
	return call(a.f, serviceELB, "DetachLoadBalancerFromSubnets", func() (*elb.DetachLoadBalancerFromSubnetsOutput, error) {
		return a.f.elb.DetachLoadBalancerFromSubnets(ctx, req, opts...)
	})
}

func (a elbAPI) AttachLoadBalancerToSubnets(ctx context.Context, req *elb.AttachLoadBalancerToSubnetsInput, opts ...func(*elb.Options)) (*elb.AttachLoadBalancerToSubnetsOutput, error) {
	return call(a.f, serviceELB, "AttachLoadBalancerToSubnets", func() (*elb.AttachLoadBalancerToSubnetsOutput, error) {
		return a.f.elb.AttachLoadBalancerToSubnets(ctx, req, opts...)
	})
}

func (a elbAPI) CreateLoadBalancerListeners(ctx context.Context, req *elb.CreateLoadBalancerListenersInput, opts ...func(*elb.Options)) (*elb.CreateLoadBalancerListenersOutput, error) {
	return call(a.f, serviceELB, "CreateLoadBalancerListeners", func() (*elb.CreateLoadBalancerListenersOutput, error) {
		return a.f.elb.CreateLoadBalancerListeners(ctx, req, opts...)
	})
}

func (a elbAPI) DeleteLoadBalancerListeners(ctx context.Context, req *elb.DeleteLoadBalancerListenersInput, opts ...func(*elb.Options)) (*elb.DeleteLoadBalancerListenersOutput, error) {
	return call(a.f, serviceELB, "DeleteLoadBalancerListeners", func() (*elb.DeleteLoadBalancerListenersOutput, error) {
		return a.f.elb.DeleteLoadBalancerListeners(ctx, req, opts...)
	})
}

func (a elbAPI) ApplySecurityGroupsToLoadBalancer(ctx context.Context, req *elb.ApplySecurityGroupsToLoadBalancerInput, opts ...func(*elb.Options)) (*elb.ApplySecurityGroupsToLoadBalancerOutput, error) {
	return call(a.f, serviceELB, "ApplySecurityGroupsToLoadBalancer", func() (*elb.ApplySecurityGroupsToLoadBalancerOutput, error) {
		return a.f.elb.ApplySecurityGroupsToLoadBalancer(ctx, req, opts...)
	})
}

func (a elbAPI) ConfigureHealthCheck(ctx context.Context, req *elb.ConfigureHealthCheckInput, opts ...func(*elb.Options)) (*elb.ConfigureHealthCheckOutput, error) {
	return call(a.f, serviceELB, "ConfigureHealthCheck", func() (*elb.ConfigureHealthCheckOutput, error) {
		return a.f.elb.ConfigureHealthCheck(ctx, req, opts...)
	})
}

func (a elbAPI) DescribeLoadBalancerAttributes(ctx context.Context, req *elb.DescribeLoadBalancerAttributesInput, opts ...func(*elb.Options)) (*elb.DescribeLoadBalancerAttributesOutput, error) {
	return call(a.f, serviceELB, "DescribeLoadBalancerAttributes", func() (*elb.DescribeLoadBalancerAttributesOutput, error) {
		return a.f.elb.DescribeLoadBalancerAttributes(ctx, req, opts...)
	})
}

func (a elbAPI) ModifyLoadBalancerAttributes(ctx context.Context, req *elb.ModifyLoadBalancerAttributesInput, opts ...func(*elb.Options)) (*elb.ModifyLoadBalancerAttributesOutput, error) {
	return call(a.f, serviceELB, "ModifyLoadBalancerAttributes", func() (*elb.ModifyLoadBalancerAttributesOutput, error) {
		return a.f.elb.ModifyLoadBalancerAttributes(ctx, req, opts...)
	})
}

func (a elbv2API) AddTags(ctx context.Context, req *elbv2.AddTagsInput, opts ...func(*elbv2.Options)) (*elbv2.AddTagsOutput, error) {
	return call(a.f, serviceELBv2, "AddTags", func() (*elbv2.AddTagsOutput, error) {
		return a.f.elbv2.AddTags(ctx, req, opts...)
	})
}

func (a elbv2API) CreateLoadBalancer(ctx context.Context, req *elbv2.CreateLoadBalancerInput, opts ...func(*elbv2.Options)) (*elbv2.CreateLoadBalancerOutput, error) {
	return call(a.f, serviceELBv2, "CreateLoadBalancer", func() (*elbv2.CreateLoadBalancerOutput, error) {
		return a.f.elbv2.CreateLoadBalancer(ctx, req, opts...)
	})
}

func (a elbv2API) DescribeLoadBalancers(ctx context.Context, req *elbv2.DescribeLoadBalancersInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeLoadBalancersOutput, error) {
	return call(a.f, serviceELBv2, "DescribeLoadBalancers", func() (*elbv2.DescribeLoadBalancersOutput, error) {
		return a.f.elbv2.DescribeLoadBalancers(ctx, req, opts...)
	})
}

func (a elbv2API) DeleteLoadBalancer(ctx context.Context, req *elbv2.DeleteLoadBalancerInput, opts ...func(*elbv2.Options)) (*elbv2.DeleteLoadBalancerOutput, error) {
	return call(a.f, serviceELBv2, "DeleteLoadBalancer", func() (*elbv2.DeleteLoadBalancerOutput, error) {
		return a.f.elbv2.DeleteLoadBalancer(ctx, req, opts...)
	})
}

func (a elbv2API) SetSecurityGroups(ctx context.Context, req *elbv2.SetSecurityGroupsInput, opts ...func(*elbv2.Options)) (*elbv2.SetSecurityGroupsOutput, error) {
	return call(a.f, serviceELBv2, "SetSecurityGroups", func() (*elbv2.SetSecurityGroupsOutput, error) {
		return a.f.elbv2.SetSecurityGroups(ctx, req, opts...)
	})
}

func (a elbv2API) ModifyLoadBalancerAttributes(ctx context.Context, req *elbv2.ModifyLoadBalancerAttributesInput, opts ...func(*elbv2.Options)) (*elbv2.ModifyLoadBalancerAttributesOutput, error) {
	return call(a.f, serviceELBv2, "ModifyLoadBalancerAttributes", func() (*elbv2.ModifyLoadBalancerAttributesOutput, error) {
		return a.f.elbv2.ModifyLoadBalancerAttributes(ctx, req, opts...)
	})
}

func (a elbv2API) DescribeLoadBalancerAttributes(ctx context.Context, req *elbv2.DescribeLoadBalancerAttributesInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeLoadBalancerAttributesOutput, error) {
	return call(a.f, serviceELBv2, "DescribeLoadBalancerAttributes", func() (*elbv2.DescribeLoadBalancerAttributesOutput, error) {
		return a.f.elbv2.DescribeLoadBalancerAttributes(ctx, req, opts...)
	})
}

func (a elbv2API) CreateTargetGroup(ctx context.Context, req *elbv2.CreateTargetGroupInput, opts ...func(*elbv2.Options)) (*elbv2.CreateTargetGroupOutput, error) {
	return call(a.f, serviceELBv2, "CreateTargetGroup", func() (*elbv2.CreateTargetGroupOutput, error) {
		return a.f.elbv2.CreateTargetGroup(ctx, req, opts...)
	})
}

func (a elbv2API) DescribeTargetGroups(ctx context.Context, req *elbv2.DescribeTargetGroupsInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupsOutput, error) {
	return call(a.f, serviceELBv2, "DescribeTargetGroups", func() (*elbv2.DescribeTargetGroupsOutput, error) {
		return a.f.elbv2.DescribeTargetGroups(ctx, req, opts...)
	})
}

func (a elbv2API) ModifyTargetGroup(ctx context.Context, req *elbv2.ModifyTargetGroupInput, opts ...func(*elbv2.Options)) (*elbv2.ModifyTargetGroupOutput, error) {
	return call(a.f, serviceELBv2, "ModifyTargetGroup", func() (*elbv2.ModifyTargetGroupOutput, error) {
		return a.f.elbv2.ModifyTargetGroup(ctx, req, opts...)
	})
}

func (a elbv2API) DeleteTargetGroup(ctx context.Context, req *elbv2.DeleteTargetGroupInput, opts ...func(*elbv2.Options)) (*elbv2.DeleteTargetGroupOutput, error) {
	return call(a.f, serviceELBv2, "DeleteTargetGroup", func() (*elbv2.DeleteTargetGroupOutput, error) {
		return a.f.elbv2.DeleteTargetGroup(ctx, req, opts...)
	})
}

func (a elbv2API) DescribeTargetHealth(ctx context.Context, req *elbv2.DescribeTargetHealthInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeTargetHealthOutput, error) {
	return call(a.f, serviceELBv2, "DescribeTargetHealth", func() (*elbv2.DescribeTargetHealthOutput, error) {
		return a.f.elbv2.DescribeTargetHealth(ctx, req, opts...)
	})
}

func (a elbv2API) DescribeTargetGroupAttributes(ctx context.Context, req *elbv2.DescribeTargetGroupAttributesInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupAttributesOutput, error) {
	return call(a.f, serviceELBv2, "DescribeTargetGroupAttributes", func() (*elbv2.DescribeTargetGroupAttributesOutput, error) {
		return a.f.elbv2.DescribeTargetGroupAttributes(ctx, req, opts...)
	})
}

func (a elbv2API) ModifyTargetGroupAttributes(ctx context.Context, req *elbv2.ModifyTargetGroupAttributesInput, opts ...func(*elbv2.Options)) (*elbv2.ModifyTargetGroupAttributesOutput, error) {
	return call(a.f, serviceELBv2, "ModifyTargetGroupAttributes", func() (*elbv2.ModifyTargetGroupAttributesOutput, error) {
		return a.f.elbv2.ModifyTargetGroupAttributes(ctx, req, opts...)
	})
}

func (a elbv2API) RegisterTargets(ctx context.Context, req *elbv2.RegisterTargetsInput, opts ...func(*elbv2.Options)) (*elbv2.RegisterTargetsOutput, error) {
	return call(a.f, serviceELBv2, "RegisterTargets", func() (*elbv2.RegisterTargetsOutput, error) {
		return a.f.elbv2.RegisterTargets(ctx, req, opts...)
	})
}

func (a elbv2API) DeregisterTargets(ctx context.Context, req *elbv2.DeregisterTargetsInput, opts ...func(*elbv2.Options)) (*elbv2.DeregisterTargetsOutput, error) {
	return call(a.f, serviceELBv2, "DeregisterTargets", func() (*elbv2.DeregisterTargetsOutput, error) {
		return a.f.elbv2.DeregisterTargets(ctx, req, opts...)
	})
}

func (a elbv2API) CreateListener(ctx context.Context, req *elbv2.CreateListenerInput, opts ...func(*elbv2.Options)) (*elbv2.CreateListenerOutput, error) {
	return call(a.f, serviceELBv2, "CreateListener", func() (*elbv2.CreateListenerOutput, error) {
		return a.f.elbv2.CreateListener(ctx, req, opts...)
	})
}

func (a elbv2API) DescribeListeners(ctx context.Context, req *elbv2.DescribeListenersInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeListenersOutput, error) {
	return call(a.f, serviceELBv2, "DescribeListeners", func() (*elbv2.DescribeListenersOutput, error) {
		return a.f.elbv2.DescribeListeners(ctx, req, opts...)
	})
}

func (a elbv2API) DeleteListener(ctx context.Context, req *elbv2.DeleteListenerInput, opts ...func(*elbv2.Options)) (*elbv2.DeleteListenerOutput, error) {
	return call(a.f, serviceELBv2, "DeleteListener", func() (*elbv2.DeleteListenerOutput, error) {
		return a.f.elbv2.DeleteListener(ctx, req, opts...)
	})
}

func (a elbv2API) ModifyListener(ctx context.Context, req *elbv2.ModifyListenerInput, opts ...func(*elbv2.Options)) (*elbv2.ModifyListenerOutput, error) {
	return call(a.f, serviceELBv2, "ModifyListener", func() (*elbv2.ModifyListenerOutput, error) {
		return a.f.elbv2.ModifyListener(ctx, req, opts...)
	})
}
