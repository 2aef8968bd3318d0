{{/*
stratus.controllerTable is the daemon's controller table as JSON, keyed by
controller name: files/controllers.yaml, which `make manifests` generates
from internal/app's table (every name --controllers accepts for a
controller, whether '*' enables it, the flags it needs, its ServiceAccount
and its RBAC). The chart names no controller itself, so it cannot drift
from the daemon.
*/}}
{{- define "stratus.controllerTable" -}}
{{- $t := .Files.Get "files/controllers.yaml" | fromYaml -}}
{{- if not $t.controllers }}{{ fail "files/controllers.yaml holds no controllers: run `make manifests`" }}{{ end -}}
{{- toJson $t.controllers -}}
{{- end -}}

{{/*
stratus.flagSet renders "true" when the chart sets the daemon's flag .flag
(a flag the controller table says a controller needs, or is enabled by) to
a value that turns it on. A flag the chart does not set fails the render,
so a table entry naming one cannot be silently ignored.
*/}}
{{- define "stratus.flagSet" -}}
{{- $v := .root.Values -}}
{{- $flags := dict "allocate-node-cidrs" $v.allocateNodeCIDRs "configure-cloud-routes" $v.configureCloudRoutes "cluster-cidr" $v.clusterCIDR -}}
{{- if not (hasKey $flags .flag) }}{{ fail (printf "the controller table names --%s, which the chart does not set from its values" .flag) }}{{ end -}}
{{- if get $flags .flag }}true{{ end -}}
{{- end -}}

{{/*
stratus.controllerEnabled renders "true" when the controller .name (its
table entry .ctl) runs with these values: --controllers semantics ('*'
enables it unless it is off by default, its name or any alias enables it,
'-' before any of them disables it and wins), the flag that enables it in
the chart (allocateNodeCIDRs adds node IPAM to --controllers, see
stratus.controllers), and the flags without which it skips itself.
*/}}
{{- define "stratus.controllerEnabled" -}}
{{- $c := .root.Values.controllers -}}
{{- $on := and (has "*" $c) (not .ctl.offByDefault) -}}
{{- $off := false -}}
{{- range prepend .ctl.aliases .name -}}
{{- if has . $c }}{{ $on = true }}{{ end -}}
{{- if has (printf "-%s" .) $c }}{{ $off = true }}{{ end -}}
{{- end -}}
{{- if and .ctl.enabledBy (include "stratus.flagSet" (dict "root" .root "flag" .ctl.enabledBy)) }}{{ $on = true }}{{ end -}}
{{- range .ctl.requires -}}
{{- if not (include "stratus.flagSet" (dict "root" $.root "flag" .)) }}{{ $on = false }}{{ end -}}
{{- end -}}
{{- if and $on (not $off) }}true{{ end -}}
{{- end -}}

{{/* stratus.flowList renders a list of strings as a YAML flow sequence: ["a", "b"]. */}}
{{- define "stratus.flowList" -}}
{{- $q := list -}}
{{- range . }}{{ $q = append $q (quote .) }}{{ end -}}
[{{ join ", " $q }}]
{{- end -}}

{{/*
stratus.controllerRBAC renders one controller's ClusterRole (the rules of
its table entry .ctl, each under the comment that says why) and the
binding: to its ServiceAccount with useServiceAccountCredentials, else to
the daemon's. Controllers that share a ServiceAccount keep a role each, so
what each holds stays its own rules.
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
{{- range .ctl.rbac.rules }}
{{- if .why }}
{{- range splitList "\n" .why }}
  # {{ . }}
{{- end }}
{{- end }}
  - apiGroups: {{ include "stratus.flowList" .apiGroups }}
    resources: {{ include "stratus.flowList" .resources }}
{{- with .resourceNames }}
    resourceNames: {{ include "stratus.flowList" . }}
{{- end }}
    verbs: {{ include "stratus.flowList" .verbs }}
{{- end }}
{{- if or (has "--observe" $root.Values.extraArgs) (has "--observe=true" $root.Values.extraArgs) }}
  # Observe mode (--observe) reads each object before its dry-run write, to
  # report the change the write would make.
  - apiGroups: [""]
    resources: {{ include "stratus.flowList" .ctl.rbac.writes }}
    verbs: ["get"]
{{- end }}
{{- with .ctl.rbac.rareEvents }}
  # rare: {{ . }}
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
    name: {{ .ctl.serviceAccount }}
    namespace: kube-system
{{- else }}
    name: {{ include "stratus.serviceAccountName" $root }}
    namespace: {{ $root.Release.Namespace }}
{{- end }}
{{- end -}}
