// Package awsfakes builds AWS' own cloud provider
// (k8s.io/cloud-provider-aws/pkg/providers/v1) over AWS' own in-process
// fakes (its NewFakeAWSServices), for tests that run the real provider
// inside Stratus without an AWS account.
//
// It is not a fake of AWS. Every answer comes from AWS' fakes or from AWS'
// provider code, except where the fakes fall short for a test that runs
// the provider in a daemon; there a thin wrapper steps in, each documented
// where it is written:
//
//   - AWS' fake EC2 holds one instance (the one the provider runs on) and
//     keeps it unexported: the wrapper adds the tests' instances to the
//     DescribeInstances answers, tagged with the cluster, and changes their
//     state as EC2 does when a machine is stopped or terminated (ec2.go).
//   - AWS' fake DescribeInstanceTopology panics, and the provider calls it
//     for every InstanceMetadata: the wrapper answers it from the instances
//     it holds, as EC2 answers for their instance families (ec2.go).
//   - AWS' fakes count calls in a map without a lock, and the provider
//     sorts an answer's network interfaces in place, while Stratus calls
//     the provider from several workers at once: every call into the fakes
//     is serialized (faults.go), and the tests' instances are described
//     afresh for every answer (ec2.go).
//   - Config.Throttle and Config.FailAfter of pkg/conformance need a cloud
//     that can throttle and lose answers: every call the provider makes to
//     EC2, ELB and ELBv2 passes through one point that can fail it as AWS'
//     API fails (faults.go).
//
// The cluster's VPC (a public subnet per zone, a main route table) is
// given to the fake EC2 through its own exported CreateSubnet and
// CreateRouteTable, as AWS' own load balancer tests give it (cloud.go).
//
// What AWS' fakes cannot do is left as they do it: their security groups,
// routes and most ELB and ELBv2 calls panic "Not implemented" or keep no
// state, and the tests that reach them say so (docs/providers-aws.md).
//
// The fakes know only us-west-2 and its zones us-west-2a, -2b and -2c.
package awsfakes
