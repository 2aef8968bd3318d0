// Package localcloud is the cloudprovider.Interface implementation for
// localcloud, Stratus' embedded cloud. It is also the worked example of
// docs/providers.md: every call goes through the localcloud Go client, the
// provider keeps no state of its own beyond its configuration, and it
// implements Stratus' optional extension interfaces (cloud.InstanceLister,
// cloud.LoadBalancerLister) so that controllers can replace per-node calls
// with one paginated list.
//
// Configuration (--cloud-config) is a small "key: value" file:
//
//	url: http://127.0.0.1:8787   # required
//	tokenFile: /var/run/localcloud/token   # or token: <literal>
//	clusterName: kubernetes       # used when a controller passes none
//	maxRetries: 3                 # retries of 429 answers
package localcloud
