/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package tracing

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestEnabledReadsTheOTELEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{env: nil, want: false},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4317"}, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_TRACES_EXPORTER": "none"}, want: false},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, want: false},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, want: false},
	} {
		NewWithT(t).Expect(Enabled(func(k string) string { return tc.env[k] })).To(Equal(tc.want), "%v", tc.env)
	}
}

// A Delegation's ids depend on its UID alone, so any replica, before or
// after a restart, names the same span.
func TestIDsDeriveFromTheUID(t *testing.T) {
	g := NewWithT(t)
	g.Expect(SpanIDOf("a")).To(Equal(SpanIDOf("a")))
	g.Expect(SpanIDOf("a")).NotTo(Equal(SpanIDOf("b")))
	g.Expect(TraceIDOf("a").IsValid()).To(BeTrue())
	g.Expect(SpanIDOf("a").IsValid()).To(BeTrue())
}
