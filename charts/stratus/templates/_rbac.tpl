{{/*
stratus.controllerEnabled renders "true" when the controller .name runs
with these values: --controllers semantics ('*' or the name, or upstream's
older alias, enables it; '-name' disables it), and the flags the network
controllers need (node-route: configureCloudRoutes and a clusterCIDR, as
upstream's; node-ipam, which '*' leaves out as upstream's manager has none:
allocateNodeCIDRs, which adds it to --controllers, see stratus.controllers).
*/}}
{{- define "stratus.controllerEnabled" -}}
{{- $c := .root.Values.controllers -}}
{{- $off := or (has (printf "-%s" .name) $c) (has (printf "-%s" .alias) $c) -}}
{{- $on := and (or (has "*" $c) (has .name $c) (has .alias $c)) (not $off) -}}
{{- if eq .name "node-ipam-controller" }}{{ $on = and .root.Values.allocateNodeCIDRs (not $off) }}{{ end -}}
{{- if eq .name "node-route-controller" }}{{ $on = and $on .root.Values.configureCloudRoutes .root.Values.clusterCIDR }}{{ end -}}
{{- if $on }}true{{ end -}}
{{- end -}}

{{/*
stratus.controllerServiceAccount is the ServiceAccount (in kube-system) the
controller .name runs as with useServiceAccountCredentials: upstream's
client name for it, as the daemon uses (node-controller for the node
controllers and node IPAM, service-controller, route-controller); a
provider's own controller runs as its own name.
*/}}
{{- define "stratus.controllerServiceAccount" -}}
{{- $sa := dict "cloud-node-controller" "node-controller" "cloud-node-lifecycle-controller" "node-controller" "node-ipam-controller" "node-controller" "service-lb-controller" "service-controller" "node-route-controller" "route-controller" -}}
{{- get $sa . | default . -}}
{{- end -}}

{{/*
stratus.controllerRBAC renders one controller's ClusterRole (the rules of
"stratus.rules.<name>") and the binding: to its ServiceAccount
(stratus.controllerServiceAccount) with useServiceAccountCredentials, else
to the daemon's. Controllers that share a ServiceAccount keep a role each,
so what each holds stays its own rules.
*/}}
{{/*
stratus.ownsControllerServiceAccount renders "true" when the controller
ServiceAccount kube-system/.name exists and belongs to a release of this
name and namespace: one an earlier version of this chart shipped. The chart
ships none any more (the daemon creates a missing one, and an uninstall
must not delete one kube-controller-manager or another manager shares), but
one it did ship must stay declared, with the keep policy, or upgrading
would delete it. (helm template, which asks no cluster, never renders it.)
*/}}
{{- define "stratus.ownsControllerServiceAccount" -}}
{{- $sa := lookup "v1" "ServiceAccount" "kube-system" .name -}}
{{- $ann := dig "metadata" "annotations" dict $sa -}}
{{- if and $sa (eq (get $ann "meta.helm.sh/release-name") .root.Release.Name) (eq (get $ann "meta.helm.sh/release-namespace") .root.Release.Namespace) }}true{{ end -}}
{{- end -}}

{{- define "stratus.controllerRBAC" -}}
{{- $root := .root -}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "stratus.fullname" $root }}:{{ .name }}
  labels:
    {{- include "stratus.labels" $root | nindent 4 }}
rules:
{{- include (printf "stratus.rules.%s" .name) $root }}
{{- if or (has "--observe" $root.Values.extraArgs) (has "--observe=true" $root.Values.extraArgs) }}
  # Observe mode (--observe) reads each object before its dry-run write, to
  # report the change the write would make.
  - apiGroups: [""]
    resources: {{ include (printf "stratus.writes.%s" .name) $root }}
    verbs: ["get"]
{{- end }}
{{- if eq .name "node-route-controller" }}
  # rare: this controller records an event only when a cloud route cannot be created.
{{- else if eq .name "node-ipam-controller" }}
  # rare: this controller records an event only when a Node's pod CIDR cannot be allocated or is invalid.
{{- else }}
  # Events about the objects it handles, through the core API (v1 Events), as upstream's controllers record them.
{{- end }}
  - apiGroups: [""]
    resources: ["events"]
    verbs: ["create"]
  # rare: an event that repeats is counted up with PATCH instead of created again.
  - apiGroups: [""]
    resources: ["events"]
    verbs: ["patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ include "stratus.fullname" $root }}:{{ .name }}
  labels:
    {{- include "stratus.labels" $root | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ include "stratus.fullname" $root }}:{{ .name }}
subjects:
  - kind: ServiceAccount
{{- if $root.Values.useServiceAccountCredentials }}
    name: {{ include "stratus.controllerServiceAccount" .name }}
    namespace: kube-system
{{- else }}
    name: {{ include "stratus.serviceAccountName" $root }}
    namespace: {{ $root.Release.Namespace }}
{{- end }}
{{- end -}}

{{/* What each controller writes (observe mode reads it first). */}}
{{- define "stratus.writes.cloud-node-controller" }}["nodes", "nodes/status"]{{ end }}
{{- define "stratus.writes.cloud-node-lifecycle-controller" }}["nodes"]{{ end }}
{{- define "stratus.writes.service-lb-controller" }}["services/status"]{{ end }}
{{- define "stratus.writes.node-route-controller" }}["nodes/status"]{{ end }}
{{- define "stratus.writes.node-ipam-controller" }}["nodes"]{{ end }}

{{/* The rules of each controller, events aside. */}}
{{- define "stratus.rules.cloud-node-controller" }}
  # Initialization and refresh: providerID, labels and the taint removal
  # (spec and metadata) ...
  - apiGroups: [""]
    resources: ["nodes"]
    verbs: ["patch"]
  # ... and addresses (status).
  - apiGroups: [""]
    resources: ["nodes/status"]
    verbs: ["patch"]
{{- end }}

{{- define "stratus.rules.cloud-node-lifecycle-controller" }}
  # The shutdown taint, added and removed.
  - apiGroups: [""]
    resources: ["nodes"]
    verbs: ["patch"]
  # A NotReady Node whose instance the cloud says is gone.
  - apiGroups: [""]
    resources: ["nodes"]
    verbs: ["delete"]
{{- end }}

{{- define "stratus.rules.service-lb-controller" }}
  # The cleanup finalizer and status.loadBalancer, both through the status
  # subresource, as upstream writes them.
  - apiGroups: [""]
    resources: ["services/status"]
    verbs: ["patch"]
  # rare: with --delete-orphaned-load-balancers, a Service is re-read from the API server before its orphaned load balancer is deleted.
  - apiGroups: [""]
    resources: ["services"]
    verbs: ["get"]
{{- end }}

{{- define "stratus.rules.node-route-controller" }}
  # The NetworkUnavailable condition once a Node's routes exist.
  - apiGroups: [""]
    resources: ["nodes/status"]
    verbs: ["patch"]
{{- end }}

{{- define "stratus.rules.node-ipam-controller" }}
  # spec.podCIDR(s) of a Node.
  - apiGroups: [""]
    resources: ["nodes"]
    verbs: ["patch"]
{{- end }}
