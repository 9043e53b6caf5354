{{/*
The labels of every object: the name, then commonLabels.
*/}}
{{- define "railgate.labels" -}}
app.kubernetes.io/name: railgate
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The image of every container: repository:tag, or repository@digest.
*/}}
{{- define "railgate.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
{{- end }}

{{/*
The resource name a tenant's pods request: its "resource", else <domain>/<name>.
Takes (dict "tenant" T "root" $).
*/}}
{{- define "railgate.resource" -}}
{{- .tenant.resource | default (printf "%s/%s" .root.Values.domain .tenant.name) -}}
{{- end }}

{{/*
The keys of an object, as a JSON array, in the order of a node config's
reference (docs/config.md) where it names them, then in alphabetical order.
*/}}
{{- define "railgate.jsonKeys" -}}
{{- $m := . -}}
{{- $keys := list -}}
{{- range list "name" "index" "enabled" "gpu" "nic" "numa" "mtu" "addressing" "address" "addresses" "gateway" "table" "prefixes" "mode" "type" "resource" "namespaces" "rails" "vrf" "ipam" -}}
{{- if hasKey $m . }}{{ $keys = append $keys . }}{{ end -}}
{{- end -}}
{{- range keys $m | sortAlpha -}}
{{- if not (has . $keys) }}{{ $keys = append $keys . }}{{ end -}}
{{- end -}}
{{- toJson $keys -}}
{{- end }}

{{/*
A value as compact JSON on one line, with ", " and ": " between items, the
keys of an object in railgate.jsonKeys order.
*/}}
{{- define "railgate.json" -}}
{{- if kindIs "map" . -}}
{{- $m := . -}}
{{- $items := list -}}
{{- range include "railgate.jsonKeys" $m | fromJsonArray -}}
{{- $items = append $items (printf "%s: %s" (toJson .) (include "railgate.json" (get $m .))) -}}
{{- end -}}
{{- printf "{%s}" (join ", " $items) -}}
{{- else if kindIs "slice" . -}}
{{- $items := list -}}
{{- range . }}{{ $items = append $items (include "railgate.json" .) }}{{ end -}}
{{- printf "[%s]" (join ", " $items) -}}
{{- else -}}
{{- toJson . -}}
{{- end -}}
{{- end }}

{{/*
The items of a node config's list (rails, tenants), one line each of at most
88 characters where they fit: short items share a line, and a long object
breaks between its keys, its further lines indented one more.
Takes the list; the lines are indented 4, as in a node.json.
*/}}
{{- define "railgate.jsonLines" -}}
{{- $width := 88 -}}
{{- $indent := "    " -}}
{{- $lines := list -}}
{{- $cur := "" -}}
{{- $n := len . -}}
{{- range $i, $item := . -}}
{{- $sep := ternary "" "," (eq (add1 $i) $n) -}}
{{- $one := printf "%s%s" (include "railgate.json" $item) $sep -}}
{{- if and $cur (le (len (printf "%s%s %s" $indent $cur $one)) $width) -}}
{{- $cur = printf "%s %s" $cur $one -}}
{{- else -}}
{{- if $cur }}{{ $lines = append $lines (printf "%s%s" $indent $cur) }}{{ end -}}
{{- $cur = "" -}}
{{- if or (le (len (printf "%s%s" $indent $one)) $width) (not (kindIs "map" $item)) -}}
{{- $cur = $one -}}
{{- else -}}
{{- $keys := include "railgate.jsonKeys" $item | fromJsonArray -}}
{{- $line := "{" -}}
{{- $lead := $indent -}}
{{- range $j, $k := $keys -}}
{{- $entry := printf "%s: %s" (toJson $k) (include "railgate.json" (get $item $k)) -}}
{{- $end := ternary (printf "}%s" $sep) "," (eq (add1 $j) (len $keys)) -}}
{{- if or (eq $line "{") (eq $line " ") -}}
{{- $line = printf "%s%s" $line $entry -}}
{{- else if le (len (printf "%s%s, %s%s" $lead $line $entry $end)) $width -}}
{{- $line = printf "%s, %s" $line $entry -}}
{{- else -}}
{{- $lines = append $lines (printf "%s%s," $lead $line) -}}
{{- $line = printf " %s" $entry -}}
{{- end -}}
{{- end -}}
{{- $lines = append $lines (printf "%s%s}%s" $lead $line $sep) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $cur }}{{ $lines = append $lines (printf "%s%s" $indent $cur) }}{{ end -}}
{{- join "\n" $lines -}}
{{- end }}

{{/*
The agent's metrics listen address from metrics.host and metrics.port: an
IPv6 host in brackets.
*/}}
{{- define "railgate.metricsListen" -}}
{{- if contains ":" .Values.metrics.host -}}
[{{ .Values.metrics.host }}]:{{ .Values.metrics.port }}
{{- else -}}
{{ .Values.metrics.host }}:{{ .Values.metrics.port }}
{{- end -}}
{{- end }}

{{/*
"true" when metrics are on and metrics.host is not the node's loopback
(127.0.0.0/8, ::1): only then can a Prometheus off the node scrape them, and
only then does the chart advertise them (pod annotations, Service,
ServiceMonitor). A ServiceMonitor asked for on loopback is refused.
*/}}
{{- define "railgate.metricsOpen" -}}
{{- $h := .Values.metrics.host -}}
{{- $loopback := or (hasPrefix "127." $h) (eq $h "::1") (hasPrefix "::ffff:127." (lower $h)) -}}
{{- if and .Values.metrics.enabled $loopback .Values.metrics.serviceMonitor.enabled -}}
{{- fail (printf "metrics.serviceMonitor.enabled: metrics.host %s is the node's loopback, which no Prometheus off the node reaches; set metrics.host=0.0.0.0 (or ::) to open it" $h) -}}
{{- end -}}
{{- if and .Values.metrics.enabled (not $loopback) }}true{{ end -}}
{{- end }}

{{/*
The node.json of one entry of .Values.nodes: the entry without the chart's
"name" and "comment", with "domain" and "tenants" from the values unless it
sets them, and "metrics" when metrics.enabled unless it sets its own; one key a line, "rails" and "tenants" as railgate.jsonLines.
Takes (dict "node" N "root" $).
*/}}
{{- define "railgate.nodeJson" -}}
{{- $root := .root -}}
{{- $cfg := omit .node "name" "comment" -}}
{{- if not (hasKey $cfg "domain") -}}
{{- $_ := set $cfg "domain" $root.Values.domain -}}
{{- end -}}
{{- if and (not (hasKey $cfg "mode")) (ne $root.Values.mode "devicePlugin") -}}
{{- $_ := set $cfg "mode" $root.Values.mode -}}
{{- end -}}
{{- if not (hasKey $cfg "tenants") -}}
{{- $tenants := list -}}
{{- range $root.Values.tenants }}{{ $tenants = append $tenants (omit . "quota") }}{{ end -}}
{{- $_ := set $cfg "tenants" $tenants -}}
{{- end -}}
{{- if and $root.Values.metrics.enabled (not (hasKey $cfg "metrics")) -}}
{{- $_ := set $cfg "metrics" (dict "listen" (include "railgate.metricsListen" $root)) -}}
{{- end -}}
{{- $keys := list -}}
{{- range list "domain" "mode" "kubeletDir" "stateDir" "logFile" "sysfsRoot" "procRoot" "devRoot" "cdiKind" "cdiDir" "discovery" -}}
{{- if hasKey $cfg . }}{{ $keys = append $keys . }}{{ end -}}
{{- end -}}
{{- range keys $cfg | sortAlpha -}}
{{- if not (has . (concat $keys (list "rails" "tenants"))) }}{{ $keys = append $keys . }}{{ end -}}
{{- end -}}
{{- $fields := list -}}
{{- range $keys -}}
{{- $fields = append $fields (printf "%s: %s" (toJson .) (include "railgate.json" (get $cfg .))) -}}
{{- end -}}
{{- range list "rails" "tenants" -}}
{{- if hasKey $cfg . -}}
{{- $list := get $cfg . -}}
{{- if and (kindIs "slice" $list) $list -}}
{{- $fields = append $fields (printf "%s: [\n%s\n  ]" (toJson .) (include "railgate.jsonLines" $list)) -}}
{{- else -}}
{{- $fields = append $fields (printf "%s: %s" (toJson .) (include "railgate.json" $list)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- printf "{\n  %s\n}" (join ",\n  " $fields) -}}
{{- end }}

{{/*
"true" when any node runs the DRA driver (the top-level mode, or a node
entry's own), else "".
*/}}
{{- define "railgate.dra" -}}
{{- $dra := eq .Values.mode "dra" -}}
{{- range .Values.nodes }}{{ if eq (.mode | default "") "dra" }}{{ $dra = true }}{{ end }}{{ end -}}
{{- if $dra }}true{{ end -}}
{{- end }}

{{/*
A tenant's DeviceClass: <tenant>.<domain>. Every class whose name ends in
.<domain> is railgate's: the admission policies rely on it.
Takes (dict "tenant" T "root" $).
*/}}
{{- define "railgate.deviceClass" -}}
{{- printf "%s.%s" .tenant.name .root.Values.domain -}}
{{- end }}
