{{/* Names, labels and the operator's command line. */}}

{{- define "tether.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name; the chart name is not repeated when the release already holds it. */}}
{{- define "tether.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "tether.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tether.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "tether.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "tether.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tether
{{- end }}

{{- define "tether.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tether.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* watchNamespaces as one comma-separated string; a list or a string
     ("a,b", as --set gives it) both work. Empty: every namespace. */}}
{{- define "tether.watchNamespaces" -}}
{{- $v := .Values.watchNamespaces | default list }}
{{- if kindIs "string" $v }}{{ $v = splitList "," $v }}{{ end }}
{{- $out := list }}
{{- range $v }}{{ with trim . }}{{ $out = append $out . }}{{ end }}{{ end }}
{{- join "," $out }}
{{- end }}

{{/* The shards' names: the release's full name when unsharded (the name it
     always had), else <fullname>-shard-<i>. Each Deployment, PDB and push
     Service is rendered once per shard, with .shard and .name set. */}}
{{- define "tether.shards" -}}
{{- $n := .Values.shards | int }}
{{- range $i := until $n }}
- index: {{ $i }}
  name: {{ if eq $n 1 }}{{ include "tether.fullname" $ }}{{ else }}{{ printf "%s-shard-%d" (include "tether.fullname" $) $i | trunc 63 | trimSuffix "-" }}{{ end }}
{{- end }}
{{- end }}

{{/* Replicas of each shard's Deployment. */}}
{{- define "tether.replicasPerShard" -}}
{{- if and (gt (int .Values.shards) 1) .Values.replicasPerShard }}{{ .Values.replicasPerShard | int }}{{ else }}{{ .Values.replicas | int }}{{ end }}
{{- end }}

{{/* A shard's selector labels: the shard label only when sharded, so an
     unsharded release keeps the selector it always had. */}}
{{- define "tether.shardSelectorLabels" -}}
{{ include "tether.selectorLabels" .root }}
app.kubernetes.io/component: operator
{{- if gt (int .root.Values.shards) 1 }}
delegation.tether.dev/shard: {{ .shard.index | quote }}
{{- end }}
{{- end }}

{{/* The push URL of a shard: its own Service, so a notification reaches the
     shard that follows the task. push.url is used only when unsharded. */}}
{{- define "tether.pushURL" -}}
{{- if and .root.Values.push.url (eq (int .root.Values.shards) 1) }}
{{- .root.Values.push.url }}
{{- else }}
{{- printf "http://%s-push.%s.svc:%d" .shard.name .root.Release.Namespace (.root.Values.push.port | int64) }}
{{- end }}
{{- end }}

{{- define "tether.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* One RoleBinding or ClusterRoleBinding subject: the operator's ServiceAccount. */}}
{{- define "tether.subjects" -}}
- kind: ServiceAccount
  name: {{ include "tether.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/* The operator's flags, one per value. Numbers go through int64 so large
     ones are not printed in float notation. */}}
{{- define "tether.args" -}}
{{- $shard := .shard }}
{{- with .root }}
- --metrics-bind-address={{ if .Values.metrics.enabled }}:{{ .Values.metrics.port | int64 }}{{ else }}0{{ end }}
- --metrics-secure={{ .Values.metrics.secure }}
- --health-probe-bind-address=:{{ .Values.healthProbe.port | int64 }}
{{- if gt (int .Values.shards) 1 }}
- --shards={{ .Values.shards | int64 }}
- --shard={{ $shard.index | int64 }}
- --shard-filtering={{ .Values.shardFiltering }}
{{- end }}
{{- if .Values.leaderElection.enabled }}
- --leader-elect
- --leader-election-namespace={{ .Release.Namespace }}
- {{ printf "--leader-election-lease-duration=%s" .Values.leaderElection.leaseDuration | quote }}
- {{ printf "--leader-election-renew-deadline=%s" .Values.leaderElection.renewDeadline | quote }}
- {{ printf "--leader-election-retry-period=%s" .Values.leaderElection.retryPeriod | quote }}
{{- end }}
{{- with include "tether.watchNamespaces" . }}
- {{ printf "--watch-namespaces=%s" . | quote }}
{{- end }}
- --max-concurrent-reconciles={{ .Values.maxConcurrentReconciles | int64 }}
- --max-calls-per-agent={{ .Values.maxCallsPerAgent | int64 }}
- {{ printf "--max-call-timeout=%s" .Values.maxCallTimeout | quote }}
- --kube-api-qps={{ .Values.kubeApiQps }}
- --kube-api-burst={{ .Values.kubeApiBurst | int64 }}
- {{ printf "--cancel-timeout=%s" .Values.cancelTimeout | quote }}
- {{ printf "--send-timeout=%s" .Values.sendTimeout | quote }}
- --max-depth={{ .Values.maxDepth | int64 }}
{{- with .Values.agentDenyCIDRs }}
- {{ printf "--agent-deny-cidrs=%s" (join "," .) | quote }}
{{- end }}
{{- with .Values.agentAllowCIDRs }}
- {{ printf "--agent-allow-cidrs=%s" (join "," .) | quote }}
{{- end }}
- --max-response-bytes={{ .Values.maxResponseBytes | int64 }}
{{- if and .Values.metrics.enabled .Values.metrics.secure .Values.metrics.tls.secretName }}
- --metrics-cert-dir=/etc/tether/metrics-tls
{{- end }}
- --result-text-limit={{ .Values.resultTextLimit | int64 }}
- {{ printf "--zap-log-level=%v" .Values.logLevel | quote }}
{{- if .Values.push.enabled }}
- --push-listen=:{{ .Values.push.port | int64 }}
- {{ printf "--push-url=%s" (include "tether.pushURL" (dict "root" . "shard" $shard)) | quote }}
{{- with .Values.push.keySecret.name }}
- --push-key-file=/etc/tether/push/{{ $.root.Values.push.keySecret.key }}
{{- end }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The operator's rules (from the +kubebuilder:rbac markers), without the
Secrets rule when secrets.clusterWide is false.
*/}}
{{- define "tether.managerRules" -}}
{{- $rules := include "tether.rules.role" . | fromYamlArray }}
{{- if not .Values.secrets.clusterWide }}
{{- $kept := list }}
{{- range $rules }}
{{- if not (has "secrets" .resources) }}
{{- $kept = append $kept . }}
{{- end }}
{{- end }}
{{- $rules = $kept }}
{{- end }}
{{- toYaml $rules }}
{{- end }}
