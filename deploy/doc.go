// Package deploy holds the plain manifests rendered from the Helm chart in
// charts/stratus (by `make manifests`; a test in hack/dist keeps them equal
// to what the chart renders) and embeds them, so that the sandbox and the
// tests can apply the chart's objects, its RBAC in particular, without Helm
// in the binary.
//
//	stratus.yaml                       the default install (Deployment, 2 replicas)
//	daemonset/stratus.yaml             a DaemonSet on control-plane nodes
//	monitoring/stratus-monitoring.yaml the metrics Service, reader RBAC and ServiceMonitor
//	rbac/all-controllers.yaml          the RBAC with every controller on (the sandbox's and tests')
package deploy
