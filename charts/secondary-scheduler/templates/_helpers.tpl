{{/* The release's full name: the release name, or release-chart when they differ. */}}
{{- define "secondary-scheduler.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "secondary-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "secondary-scheduler.labels" -}}
{{ include "secondary-scheduler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "secondary-scheduler.serviceAccountName" -}}
{{- default (include "secondary-scheduler.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The configuration with the lease defaulted to the release's namespace and name. */}}
{{- define "secondary-scheduler.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- $le := default dict $config.leaderElection -}}
{{- if not (hasKey $le "resourceNamespace") -}}
{{- $_ := set $le "resourceNamespace" .Release.Namespace -}}
{{- end -}}
{{- $_ := set $le "resourceName" (include "secondary-scheduler.leaseName" .) -}}
{{- $_ := set $config "leaderElection" $le -}}
{{- toYaml $config -}}
{{- end -}}

{{/* The Lease the replicas elect a leader with: the Role grants this one by name. */}}
{{- define "secondary-scheduler.leaseName" -}}
{{- $le := default dict .Values.config.leaderElection -}}
{{- default (include "secondary-scheduler.fullname" .) $le.resourceName -}}
{{- end -}}
