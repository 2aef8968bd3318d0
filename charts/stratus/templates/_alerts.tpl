{{/*
stratus.alertGroups: the rule groups of the PrometheusRule and of the plain
rules file, built only from metrics Stratus exports. Failing Node
initializations are measured over 10m windows because a failing Node is
retried at least every 5 minutes (the controller's maximum backoff): a
shorter window would see gaps between retries and reset the alert's "for".
Failing Services are counted by a gauge that holds between retries.
Grafana/Prometheus template braces are escaped as {{`{{ ... }}`}}.
*/}}
{{- define "stratus.alertGroups" -}}
{{- $r := .Values.prometheusRule -}}
groups:
  - name: stratus
    rules:
      - alert: StratusNodesUninitialized
        expr: max(stratus_node_oldest_uninitialized_node_age_seconds) > {{ mul $r.nodeUninitializedMinutes 60 }}
        for: {{ $r.nodeUninitializedFor }}
        labels:
          severity: {{ $r.severity }}
        annotations:
          summary: A Node has waited more than {{ $r.nodeUninitializedMinutes }} minutes for initialization.
          description: {{`The oldest Node waiting for initialization has waited {{ $value | humanizeDuration }}; it keeps the uninitialized taint and gets no pods.`}}
          runbook_url: https://github.com/stratus-ccm/stratus/blob/main/docs/operations.md#stratusnodesuninitialized
      - alert: StratusServiceSyncFailing
        expr: max(stratus_service_load_balancers{state="failing"}) > 0
        for: {{ $r.serviceSyncFailingFor }}
        labels:
          severity: {{ $r.severity }}
        annotations:
          summary: A Service of type LoadBalancer has failed to sync for more than {{ $r.serviceSyncFailingFor }}.
          description: {{`For more than `}}{{ $r.serviceSyncFailingFor }}{{` Services of type LoadBalancer have failed their last sync ({{ $value }} now); their load balancers are pending or out of date.`}}
          runbook_url: https://github.com/stratus-ccm/stratus/blob/main/docs/operations.md#stratusservicesyncfailing
      - alert: StratusCloudThrottled
        expr: sum(rate(stratus_cloud_throttled_total[5m])) / sum(rate(stratus_cloud_requests_total[5m])) > {{ $r.throttledRatio }}
        for: {{ $r.throttledFor }}
        labels:
          severity: {{ $r.severity }}
        annotations:
          summary: The cloud has throttled a share above {{ $r.throttledRatio }} of Stratus' cloud calls for {{ $r.throttledFor }}.
          description: "{{`{{ $value | humanizePercentage }}`}} of cloud calls are answered with throttling although Stratus paces them."
          runbook_url: https://github.com/stratus-ccm/stratus/blob/main/docs/operations.md#stratuscloudthrottled
      - alert: StratusNoLeader
        expr: sum(stratus_leader_is_leading) < 1 or absent(stratus_leader_is_leading)
        for: {{ $r.noLeaderFor }}
        labels:
          severity: {{ $r.severity }}
        annotations:
          summary: No Stratus replica has led for {{ $r.noLeaderFor }}.
          description: No replica holds the Lease, so no controller runs; new Nodes stay uninitialized and Services pending.
          runbook_url: https://github.com/stratus-ccm/stratus/blob/main/docs/operations.md#stratusnoleader
      - alert: StratusCloudErrors
        expr: sum(rate(stratus_cloud_requests_total{result="error"}[5m])) / sum(rate(stratus_cloud_requests_total[5m])) > {{ $r.cloudErrorRatio }}
        for: {{ $r.cloudErrorFor }}
        labels:
          severity: {{ $r.severity }}
        annotations:
          summary: A share above {{ $r.cloudErrorRatio }} of Stratus' cloud calls has failed for {{ $r.cloudErrorFor }}.
          description: "{{`{{ $value | humanizePercentage }}`}} of cloud calls fail."
          runbook_url: https://github.com/stratus-ccm/stratus/blob/main/docs/operations.md#stratusclouderrors
{{- end }}
