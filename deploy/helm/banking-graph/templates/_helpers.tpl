{{/*
The six services, in start order, and what the chart knows of each: its port and the variable
that sets it (platform/runtime/config.ts), whether it is a subgraph, and which optional secrets
it reads. Not values: the services' code fixes them.
*/}}
{{- define "banking-graph.order" -}}
[user, cards, payments, compliance, gateway, rest-adapter]
{{- end }}

{{- define "banking-graph.catalog" -}}
user: {port: 4001, portVar: USER_SUBGRAPH_PORT, urlVar: USER_SUBGRAPH_URL, subgraph: true, optionalSecrets: [SMTP_URL]}
cards: {port: 4002, portVar: CARDS_SUBGRAPH_PORT, urlVar: CARDS_SUBGRAPH_URL, subgraph: true, optionalSecrets: []}
payments: {port: 4003, portVar: PAYMENTS_SUBGRAPH_PORT, urlVar: PAYMENTS_SUBGRAPH_URL, subgraph: true, optionalSecrets: [JWT_SECRET, SMTP_URL]}
compliance: {port: 4004, portVar: COMPLIANCE_SUBGRAPH_PORT, urlVar: COMPLIANCE_SUBGRAPH_URL, subgraph: true, optionalSecrets: []}
gateway: {port: 4000, portVar: GATEWAY_PORT, subgraph: false, optionalSecrets: [JWT_SECRET, SERVICE_KEYS]}
rest-adapter: {port: 8080, portVar: REST_PORT, subgraph: false, optionalSecrets: []}
{{- end }}

{{- define "banking-graph.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's prefix of every name; the longest service suffix (-rest-adapter) still fits 63 characters. */}}
{{- define "banking-graph.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 49 | trimSuffix "-" }}
{{- else if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 49 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 49 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* Labels of every object; call with (dict "root" $ "service" NAME), service optional. */}}
{{- define "banking-graph.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: banking-graph
{{ include "banking-graph.selectorLabels" . }}
{{- end }}

{{- define "banking-graph.selectorLabels" -}}
app.kubernetes.io/name: {{ include "banking-graph.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- if .service }}
app.kubernetes.io/component: {{ .service }}
{{- end }}
{{- end }}

{{- define "banking-graph.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "banking-graph.fullname" .) }}
{{- end }}

{{- define "banking-graph.image" -}}
{{- $repository := required "image.repository is required: build the image from the repository's Dockerfile and push it to your registry" .Values.image.repository }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* An env entry read from the Secret; optional ones are left unset when the key is absent. */}}
{{- define "banking-graph.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "banking-graph.secretName" .root }}
      key: {{ .name }}
      {{- if .optional }}
      optional: true
      {{- end }}
{{- end }}

{{/*
Refuses values that would give a cluster a service that cannot start or cannot stop cleanly,
with the reason: secrets that are missing, short or given twice, no way to deliver messages, a
grace period that cuts the drain, more than one compliance process, a metrics port that is a
service's own.
*/}}
{{- define "banking-graph.validate" -}}
{{- $s := .Values.secrets }}
{{- if $s.existingSecret }}
{{- if or $s.internalSecret $s.jwtSecret $s.serviceKeys .Values.mongodb.uri .Values.redis.url .Values.messages.smtpUrl }}
{{- fail "secrets.existingSecret is set: put INTERNAL_SECRET, JWT_SECRET, SERVICE_KEYS, MONGODB_URI, REDIS_URL and SMTP_URL in that Secret, and leave secrets.*, mongodb.uri, redis.url and messages.smtpUrl empty" }}
{{- end }}
{{- else }}
{{- $internal := required "secrets.internalSecret (INTERNAL_SECRET, 32+ characters, e.g. `openssl rand -hex 32`) is required, or name your own Secret in secrets.existingSecret" $s.internalSecret }}
{{- if lt (len $internal) 32 }}
{{- fail "secrets.internalSecret (INTERNAL_SECRET) must be at least 32 characters long" }}
{{- end }}
{{- if and $s.jwtSecret (lt (len $s.jwtSecret) 32) }}
{{- fail "secrets.jwtSecret (JWT_SECRET) must be at least 32 characters long" }}
{{- end }}
{{- $_ := required "mongodb.uri (MONGODB_URI) is required: your MongoDB replica set, e.g. mongodb://USER:PASSWORD@mongo-0.mongo,mongo-1.mongo,mongo-2.mongo/?replicaSet=rs0" .Values.mongodb.uri }}
{{- $_ := required "redis.url (REDIS_URL) is required, e.g. redis://:PASSWORD@redis-master:6379" .Values.redis.url }}
{{- if not (or (and .Values.messages.smtpUrl .Values.messages.smsWebhookUrl) .Values.messages.outboxDir) }}
{{- fail "the user subgraph needs messages.smtpUrl and messages.smsWebhookUrl (or messages.outboxDir, files in the pod) to send confirmation and recovery codes" }}
{{- end }}
{{- end }}
{{- if and .Values.messages.outboxDir (not (hasPrefix "/tmp/" .Values.messages.outboxDir)) }}
{{- fail "messages.outboxDir must be under /tmp/: the root filesystem is read-only and /tmp is the pod's writable emptyDir" }}
{{- end }}
{{- if le (int .Values.terminationGracePeriodSeconds) (add 5 (int .Values.config.drainSeconds)) }}
{{- fail "terminationGracePeriodSeconds must exceed config.drainSeconds plus 5 s, or the kubelet kills a service before it has drained and closed" }}
{{- end }}
{{- range $name, $svc := include "banking-graph.catalog" . | fromYaml }}
{{- if eq (int $.Values.metrics.port) (int $svc.port) }}
{{- fail (printf "metrics.port must differ from every service's port (%s listens on %v): /metrics is kept off the public port" $name $svc.port) }}
{{- end }}
{{- end }}
{{- if ne (int (index .Values.services "compliance").replicas) 1 }}
{{- fail "services.compliance.replicas must be 1: its return-rate reports are computed one at a time within a process, not across processes" }}
{{- end }}
{{- end }}
