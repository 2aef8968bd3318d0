// Package componentmetrics registers the metrics every Kubernetes
// component serves through component-base, under component-base's names,
// types, buckets and labels, so that dashboards and alerts written for
// upstream cloud-controller-managers find their series on Stratus:
// kubernetes_build_info and client-go's rest_client_* request metrics.
//
// component-base registers them in a process-wide registry from init
// functions; here they go on the registry the binary serves, when the
// binary asks. client-go's metric hooks are process-wide by client-go's
// design, so the first registry installed in a process receives them.
package componentmetrics
