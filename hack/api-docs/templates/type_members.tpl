{{- define "type_members" -}}
{{- $field := . -}}
{{- if and (eq $field.Name "metadata") (eq $field.Type.Name "ObjectMeta") -}}
Refer to the Kubernetes API documentation for the fields of `metadata`.
{{- else -}}
{{ markdownRenderFieldDoc $field.Doc }}
{{- end -}}
{{- end -}}

{{- define "field_validation" -}}
{{- $field := . -}}
{{- $parts := list -}}
{{- range $field.Validation -}}
{{- $parts = append $parts (markdownRenderFieldDoc .) -}}
{{- end -}}
{{- /* Rules of the field's own type are listed with that type, not repeated here. */ -}}
{{- $typeRules := list -}}
{{- range index $field.Type.Markers "kubebuilder:validation:XValidation" -}}
{{- $typeRules = append $typeRules .Message -}}
{{- end -}}
{{- range index $field.Markers "kubebuilder:validation:XValidation" -}}
{{- if not (has .Message $typeRules) -}}
{{- $parts = append $parts (markdownRenderFieldDoc .Message) -}}
{{- end -}}
{{- end -}}
{{- join "<br />" $parts -}}
{{- end -}}
