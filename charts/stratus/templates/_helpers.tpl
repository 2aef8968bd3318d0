{{/* Name prefix of the chart's cluster-scoped objects and its workload. */}}
{{- define "stratus.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
The daemon's ServiceAccount. Upstream's name, so that RBAC and audit
tooling written for an upstream-based CCM recognizes it.
*/}}
{{- define "stratus.serviceAccountName" -}}
cloud-controller-manager
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

{{- define "stratus.args" -}}
- --cloud-provider={{ .Values.cloudProvider }}
{{- if .Values.cloudConfig.secretName }}
- --cloud-config={{ include "stratus.cloudConfigDir" . }}/{{ .Values.cloudConfig.key }}
{{- end }}
- --cluster-name={{ .Values.clusterName }}
- --controllers={{ join "," .Values.controllers }}
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
{{- range .Values.extraArgs }}
- {{ . }}
{{- end }}
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
