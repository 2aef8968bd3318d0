// Package scenario holds the four benchmark scenarios of issue 8 (node
// initialization, load balancers, steady state, failover) and the plan
// that runs them for every contestant, cloud mode and repetition.
package scenario
