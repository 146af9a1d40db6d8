{{- define "gvList" -}}
{{- $groupVersions := . -}}
# API reference

<!-- Generated from the API types by `make api-docs`. Do not edit by hand. -->

This page lists every field of tether's resources, with its defaults and the
checks the API server applies when an object is created or changed. For what
the fields do together, read [Concepts](concepts.md).
{{ range $groupVersions }}
{{ template "gvDetails" . }}
{{- end }}
{{ end -}}
