{{- define "type" -}}
{{- $type := . -}}
{{- if markdownShouldRenderType $type }}

### {{ $type.Name }}
{{- if $type.IsAlias }}

_Underlying type:_ {{ markdownRenderTypeLink $type.UnderlyingType }}
{{- end }}

{{ $type.Doc | trim }}
{{- $rules := index $type.Markers "kubebuilder:validation:XValidation" }}
{{- if or $type.Validation $rules }}

Validation:
{{ range $type.Validation }}
- {{ . }}
{{- end }}
{{- range $rules }}
- {{ markdownRenderFieldDoc .Message }}
{{- end }}
{{- end }}
{{- if $type.References }}

Appears in:
{{ range $type.SortedReferences }}
- {{ markdownRenderTypeLink . }}
{{- end }}
{{- end }}
{{- if $type.Members }}

| Field | Description | Default | Validation |
| --- | --- | --- | --- |
{{- if $type.GVK }}
| `apiVersion` _string_ | `{{ $type.GVK.Group }}/{{ $type.GVK.Version }}` | | |
| `kind` _string_ | `{{ $type.GVK.Kind }}` | | |
{{- end }}
{{- range $type.Members }}
| `{{ .Name }}` _{{ markdownRenderType .Type }}_ | {{ template "type_members" . }} | {{ markdownRenderDefault .Default }} | {{ template "field_validation" . }} |
{{- end }}
{{- end }}
{{- if $type.EnumValues }}

| Value | Description |
| --- | --- |
{{- range $type.EnumValues }}
| `{{ .Name }}` | {{ markdownRenderFieldDoc .Doc | trimSuffix "<br />" }} |
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
