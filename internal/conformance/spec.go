/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tether-dev/tether/docs/extensions"
)

// The published schemas (docs/extensions/schemas), by file name.
const (
	SchemaLeaseRequest      = "lease-v1.request.schema.json"
	SchemaLeaseAnswer       = "lease-v1.answer.schema.json"
	SchemaLeaseCardParams   = "lease-v1.card-params.schema.json"
	SchemaBudgetRequest     = "budget-v1.request.schema.json"
	SchemaBudgetReport      = "budget-v1.status-update.schema.json"
	SchemaFailureClass      = "failure-class.schema.json"
	SchemaVectorFile        = "vector-file.schema.json"
	vectorFormat            = "tether-extension-vectors/v1"
	defaultMaxTTLSeconds    = 3600.0
	schemasDir, vectorsDir  = "schemas", "vectors"
	schemaFileSuffix        = ".schema.json"
	vectorsFileSuffixNeeded = ".json"
)

var compiled = sync.OnceValues(compileSchemas)

// compileSchemas compiles every published schema, format assertions on
// (date-time must be RFC 3339, as the extensions say).
func compileSchemas() (map[string]*jsonschema.Schema, error) {
	entries, err := fs.ReadDir(extensions.Files, schemasDir)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	ids := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), schemaFileSuffix) {
			continue
		}
		raw, err := fs.ReadFile(extensions.Files, path.Join(schemasDir, e.Name()))
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if id == "" {
			return nil, fmt.Errorf("%s: no $id", e.Name())
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		ids[e.Name()] = id
	}
	out := map[string]*jsonschema.Schema{}
	for name, id := range ids {
		s, err := c.Compile(id)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}

// SchemaNames lists the published schemas.
func SchemaNames() ([]string, error) {
	m, err := compiled()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	return names, nil
}

// Validate checks a value (any JSON-shaped Go value: decoded JSON, a struct
// with JSON tags) against a published schema. The value goes through JSON
// first, so it is checked exactly as it travels.
func Validate(schema string, v any) error {
	m, err := compiled()
	if err != nil {
		return fmt.Errorf("compiling the extension schemas: %w", err)
	}
	s, ok := m[schema]
	if !ok {
		return fmt.Errorf("no schema %q", schema)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("not valid against %s: %s", schema, oneLine(err))
	}
	return nil
}

// oneLine flattens a validation error to one line for tables and messages.
func oneLine(err error) string {
	var b strings.Builder
	if ve, ok := err.(*jsonschema.ValidationError); ok {
		for _, l := range ve.BasicOutput().Errors {
			if l.Error == nil {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			loc := l.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			fmt.Fprintf(&b, "at %s: %s", loc, l.Error.String())
		}
	}
	if b.Len() == 0 {
		return strings.Join(strings.Fields(err.Error()), " ")
	}
	return b.String()
}
