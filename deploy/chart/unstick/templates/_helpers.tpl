{{- define "unstick.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "unstick.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "unstick.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "unstick.serviceAccountName" -}}
{{- default (include "unstick.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* serve --authn from auth.mode; YAML reads an unquoted on/off as true/false. */}}
{{- define "unstick.authn" -}}
{{- $mode := toString .Values.auth.mode -}}
{{- if eq $mode "true" }}on{{ else if eq $mode "false" }}off{{ else }}{{ $mode }}{{ end -}}
{{- end -}}

{{/* "true" when serve runs as several replicas sharing Rancher's clusters (empty otherwise). */}}
{{- define "unstick.sharded" -}}
{{- if gt (int .Values.replicas) 1 -}}
{{- if not .Values.rancher.url -}}
{{- fail "replicas > 1 shares the clusters of a Rancher between serve replicas: set rancher.url (and rancher.tokenSecret)" -}}
{{- end -}}
true
{{- end -}}
{{- end -}}
