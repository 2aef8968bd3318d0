{{/* Name prefix of the chart's cluster-scoped objects and its workload. */}}
{{- define "stratus.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
The daemon's ServiceAccount: serviceAccount.name, upstream's name
(cloud-controller-manager) by default, so that RBAC and audit tooling
written for an upstream-based CCM recognizes it. Beside an installed
upstream-based CCM, which owns that name, choose another.
*/}}
{{- define "stratus.serviceAccountName" -}}
{{- .Values.serviceAccount.name -}}
{{- end -}}

{{- define "stratus.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "stratus.labels" -}}
{{ include "stratus.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: cloud-controller-manager
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "stratus.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* Where the cloud config Secret is mounted. */}}
{{- define "stratus.cloudConfigDir" -}}
/etc/stratus/cloud-config
{{- end -}}

{{/*
stratus.controllers is --controllers: the controllers value, plus each
controller a flag enables in the chart (node IPAM when allocateNodeCIDRs
asks Stratus to allocate pod CIDRs: the daemon, as upstream's manager, runs
no allocator for '*' or for --allocate-node-cidrs alone), unless the value
already names it, or disables it, by its name or any alias (the daemon
refuses a controller both enabled and disabled).
*/}}
{{- define "stratus.controllers" -}}
{{- $c := .Values.controllers -}}
{{- range $name, $ctl := include "stratus.controllerTable" . | fromJson -}}
{{- if and $ctl.enabledBy (include "stratus.flagSet" (dict "root" $ "flag" $ctl.enabledBy)) -}}
{{- $named := false -}}
{{- range prepend $ctl.aliases $name -}}
{{- if or (has . $c) (has (printf "-%s" .) $c) }}{{ $named = true }}{{ end -}}
{{- end -}}
{{- if not $named }}{{ $c = append $c $name }}{{ end -}}
{{- end -}}
{{- end -}}
{{- join "," $c -}}
{{- end -}}

{{/*
stratus.defaultArgs are the arguments the chart sets from its values;
removeArgs drops some of them by flag name (stratus.args).
*/}}
{{- define "stratus.defaultArgs" -}}
- --cloud-provider={{ .Values.cloudProvider }}
{{- if .Values.cloudConfig.secretName }}
- --cloud-config={{ include "stratus.cloudConfigDir" . }}/{{ .Values.cloudConfig.key }}
{{- end }}
- --cluster-name={{ .Values.clusterName }}
- --controllers={{ include "stratus.controllers" . }}
- --leader-elect=true
- --leader-elect-resource-namespace={{ .Release.Namespace }}
- --use-service-account-credentials={{ .Values.useServiceAccountCredentials }}
- --allocate-node-cidrs={{ .Values.allocateNodeCIDRs }}
- --configure-cloud-routes={{ .Values.configureCloudRoutes }}
{{- with .Values.clusterCIDR }}
- --cluster-cidr={{ . }}
{{- end }}
{{- with .Values.loadBalancerClass }}
- --load-balancer-class={{ . }}
{{- end }}
- --secure-port={{ .Values.securePort }}
{{- end -}}

{{/*
stratus.args: the default arguments less those removeArgs names, then
extraArgs. A name in removeArgs that the chart does not set fails the
render, so a typo does not leave the argument in place unnoticed.
*/}}
{{- define "stratus.args" -}}
{{- $defaults := include "stratus.defaultArgs" . | fromYamlArray -}}
{{- $names := list -}}
{{- range $defaults }}{{ $names = append $names (regexReplaceAll "=.*$" . "") }}{{ end -}}
{{- range .Values.removeArgs }}
{{- if not (has . $names) }}
{{- fail (printf "removeArgs: %s is not an argument the chart sets (%s)" . (join ", " $names)) }}
{{- end }}
{{- end }}
{{- range $defaults }}
{{- if not (has (regexReplaceAll "=.*$" . "") $.Values.removeArgs) }}
- {{ . }}
{{- end }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . }}
{{- end }}
{{- end -}}

{{/*
stratus.scrapeSecret is the Secret holding the token the ServiceMonitor and
PodMonitor present: metrics.authorization.secretName, or the token Secret
the chart has the API server fill for its metrics scraper ServiceAccount.
*/}}
{{- define "stratus.scrapeSecret" -}}
{{- .Values.metrics.authorization.secretName | default (printf "%s-metrics-scraper" (include "stratus.fullname" .)) -}}
{{- end -}}

{{/* stratus.scrapeEndpoint is one /metrics endpoint of a ServiceMonitor or PodMonitor. */}}
{{- define "stratus.scrapeEndpoint" -}}
port: https
scheme: https
path: /metrics
interval: {{ .interval }}
# The token of a ServiceAccount the metrics-reader role is bound to, from
# a Secret: the Operator deprecates reading Prometheus' own token file.
authorization:
  type: Bearer
  credentials:
    name: {{ include "stratus.scrapeSecret" .root }}
    key: {{ .root.Values.metrics.authorization.key }}
tlsConfig:
  # The serving certificate is self-signed unless --tls-cert-file is
  # given through extraArgs.
  insecureSkipVerify: true
{{- end -}}

{{/*
Taints a CCM must run under: nodes stay uninitialized until a CCM
initializes them, and NotReady until a CNI (which may need the CCM's routes
or addresses) runs; control-plane nodes are where a DaemonSet runs.
*/}}
{{- define "stratus.tolerations" -}}
- key: node.cloudprovider.kubernetes.io/uninitialized
  value: "true"
  effect: NoSchedule
- key: node-role.kubernetes.io/control-plane
  operator: Exists
  effect: NoSchedule
- key: node.kubernetes.io/not-ready
  operator: Exists
  effect: NoSchedule
{{- with .Values.tolerations }}
{{ toYaml . }}
{{- end }}
{{- end -}}
