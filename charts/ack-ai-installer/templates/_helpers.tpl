{{/* Prefix of every object's name: fullnameOverride, else the release name when it holds the name (nameOverride, default gpushare), else "<release>-<name>". */}}
{{- define "gpushare.fullname" -}}
{{- $name := .Release.Name -}}
{{- $app := .Values.nameOverride | default "gpushare" -}}
{{- if .Values.fullnameOverride -}}{{- $name = .Values.fullnameOverride -}}
{{- else if not (contains $app $name) -}}{{- $name = printf "%s-%s" $name $app -}}{{- end -}}
{{- $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Chart name and version, for the helm.sh/chart label. */}}
{{- define "gpushare.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels that select a component's pods; never change them (selectors are immutable).
Takes (dict "root" $ "component" NAME ["extra" (dict ...)]). */}}
{{- define "gpushare.selectorLabels" -}}
app.kubernetes.io/name: gpushare
app.kubernetes.io/instance: {{ .root.Release.Name | quote }}
app.kubernetes.io/component: {{ .component }}
{{- with .extra }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Every object's labels: the selector labels, the component's version, who manages it.
Takes (dict "root" $ "component" NAME "version" VERSION ["extra" (dict ...)]). */}}
{{- define "gpushare.labels" -}}
{{ include "gpushare.selectorLabels" . }}
app.kubernetes.io/part-of: gpushare
app.kubernetes.io/version: {{ .version | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ include "gpushare.chart" .root }}
{{- end -}}

{{/* Image reference: pinned by digest when one is set, else repository:tag. */}}
{{- define "gpushare.image" -}}
{{- if .digest -}}{{ .repository }}@{{ .digest }}{{- else -}}{{ .repository }}:{{ .tag }}{{- end -}}
{{- end -}}

{{/* The cluster's minor as a number ("28+" on some managed clusters). */}}
{{- define "gpushare.kubeMinor" -}}
{{- trimSuffix "+" .Capabilities.KubeVersion.Minor | int -}}
{{- end -}}

{{/* kube-scheduler's version: the tag pinned in the values, else the cluster's own version. */}}
{{- define "gpushare.schedulerVersion" -}}
{{- .Values.scheduler.image.tag | default (regexFind "^v[0-9]+\\.[0-9]+\\.[0-9]+" .Capabilities.KubeVersion.Version) -}}
{{- end -}}

{{/* kube-scheduler matches the cluster's version unless a tag or digest is pinned. */}}
{{- define "gpushare.schedulerImage" -}}
{{- $image := .Values.scheduler.image -}}
{{- $tag := include "gpushare.schedulerVersion" . -}}
{{- include "gpushare.image" (dict "repository" $image.repository "tag" $tag "digest" $image.digest) -}}
{{- end -}}

{{/* The device plugin's --memory-unit: 128MiB needs ACK's own plugin image (gpushare rule GS119); the
open-source plugin's word for ACK's 1GiB unit is GiB (it knows GiB and MiB only). On upgrade the unit must stay
the installed plugin's (GC411): pods hold GPU memory counted in it. */}}
{{- define "gpushare.memoryUnitArg" -}}
{{- if not .Values.devicePlugin.image.repository -}}
{{- fail "devicePlugin.image.repository is empty: set it (and devicePlugin.image.tag or .digest) to the device plugin image to run; 128MiB units and compute allocation on ACK need ACK's own, which kubectl -n kube-system get daemonsets -o wide (the IMAGES column of ack-ai-installer's device plugin) shows" -}}
{{- end -}}
{{- $openSource := and (eq (base .Values.devicePlugin.image.repository) "k8s-gpushare-plugin") (regexMatch "^v2($|[-.])" (toString .Values.devicePlugin.image.tag)) -}}
{{- if and (eq .Values.gpuMemoryUnit "128MiB") $openSource -}}
{{- fail "gpuMemoryUnit 128MiB needs ACK's own device plugin image in devicePlugin.image.repository: the open-source plugin knows GiB and MiB only and would report GiB [GS119]" -}}
{{- end -}}
{{- $unit := .Values.gpuMemoryUnit -}}
{{- if and (eq $unit "1GiB") $openSource -}}{{- $unit = "GiB" -}}{{- end -}}
{{- if .Release.IsUpgrade -}}
{{- $sizes := dict "1GiB" 1024 "128MiB" 128 "GiB" 1024 "MiB" 1 -}}
{{- range (lookup "apps/v1" "DaemonSet" .Release.Namespace "").items -}}
{{- $labels := .metadata.labels | default dict -}}
{{- if and (eq (get $labels "app.kubernetes.io/instance") $.Release.Name) (eq (get $labels "app.kubernetes.io/component") "device-plugin") -}}
{{- range (first .spec.template.spec.containers).command -}}
{{- if hasPrefix "--memory-unit=" . -}}
{{- $installed := trimPrefix "--memory-unit=" . -}}
{{- if ne (toString (get $sizes $installed)) (toString (get $sizes $unit)) -}}
{{- fail (printf "gpuMemoryUnit %s is not the installed %s: the unit is chosen at install; delete every pod requesting aliyun.com/gpu-mem, uninstall, then install with the new unit (or keep it: helm upgrade --reuse-values) [GC411]" $unit $installed) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
--memory-unit={{ $unit }}
{{- end -}}
{{/* watch's templates, one JSON file each (a ConfigMap's data). */}}
{{- define "gpushare.watchTemplates" -}}
{{- range $name, $template := .Values.watch.templates }}
{{ printf "%s.json" $name }}: {{ toJson $template | quote }}
{{- else }}
{}
{{- end }}
{{- end -}}
