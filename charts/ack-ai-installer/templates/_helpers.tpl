{{/* Image reference: pinned by digest when one is set, else repository:tag. */}}
{{- define "gpushare.image" -}}
{{- if .digest -}}{{ .repository }}@{{ .digest }}{{- else -}}{{ .repository }}:{{ .tag }}{{- end -}}
{{- end -}}

{{/* The cluster's minor as a number ("28+" on some managed clusters). */}}
{{- define "gpushare.kubeMinor" -}}
{{- trimSuffix "+" .Capabilities.KubeVersion.Minor | int -}}
{{- end -}}

{{/* kube-scheduler matches the cluster's version unless a tag or digest is pinned. */}}
{{- define "gpushare.schedulerImage" -}}
{{- $image := .Values.scheduler.image -}}
{{- $tag := $image.tag | default (regexFind "^v[0-9]+\\.[0-9]+\\.[0-9]+" .Capabilities.KubeVersion.Version) -}}
{{- include "gpushare.image" (dict "repository" $image.repository "tag" $tag "digest" $image.digest) -}}
{{- end -}}
