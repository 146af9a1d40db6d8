/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/tracing"
	"github.com/tether-dev/tether/internal/tracing/tracingtest"
)

// A three-level tree across two agents is one trace: a group root (from
// GitOps), a task at the orchestrator, and the children the orchestrator
// creates through agentkit at the worker. Every Delegation has a span under
// its parent's; every A2A call a span under its Delegation's; the agents'
// spans continue the calls' traceparent, and the children the orchestrator
// created continue its span (their annotation).
func TestATreeAcrossTwoAgentsIsOneTrace(t *testing.T) {
	exp := tracingtest.RecordSpans()
	e := setup(t)
	orchestrate(t, e)
	e.create(e.group("tree", v1alpha1.Meters{tokens: 1000}))
	e.create(e.kitTask("plan", "orchestrator", "summarise fanout=2 steps=1 spend=10 delay=10ms",
		childOf("tree"), withBudget(v1alpha1.Meters{tokens: 600})))
	root := e.waitPhase("tree", v1alpha1.PhaseSucceeded)
	plan := e.get("plan")
	kids := e.children(e.g, "plan")
	e.g.Expect(kids).To(HaveLen(2))

	traceID := tracing.TraceIDOf(string(root.UID))
	byID := map[trace.SpanID]tracetest.SpanStub{}
	e.g.Eventually(func(g Gomega) {
		clear(byID)
		for _, s := range exp.GetSpans() {
			if s.SpanContext.TraceID() == traceID {
				byID[s.SpanContext.SpanID()] = s
			}
		}
		// 4 Delegations; a send per task; an agent span per task.
		g.Expect(len(byID)).To(BeNumerically(">=", 4+3+3))
		g.Expect(byID).To(HaveKey(tracing.SpanIDOf(string(root.UID))))
	}, eventually, tick).Should(Succeed())

	delegationSpan := func(d *v1alpha1.Delegation) tracetest.SpanStub {
		s, ok := byID[tracing.SpanIDOf(string(d.UID))]
		e.g.Expect(ok).To(BeTrue(), "no span for Delegation %s", d.Name)
		e.g.Expect(s.Name).To(Equal("Delegation " + e.ns + "/" + d.Name))
		e.g.Expect(s.StartTime).To(BeTemporally("~", d.CreationTimestamp.Time, 0))
		return s
	}
	parentOf := func(s tracetest.SpanStub) tracetest.SpanStub {
		p, ok := byID[s.Parent.SpanID()]
		e.g.Expect(ok).To(BeTrue(), "the parent of span %q is not in the trace", s.Name)
		return p
	}
	// sendSpans are the spans of a Delegation's sends: one, or more when
	// a busy machine made a send wait past its deadline and it was made
	// again with the same message id. Each is a client span under the
	// Delegation's.
	sendSpans := func(d *v1alpha1.Delegation) []tracetest.SpanStub {
		var found []tracetest.SpanStub
		for _, s := range byID {
			if s.Name == "A2A send" && hasAttr(s, "tether.delegation", e.ns+"/"+d.Name) {
				found = append(found, s)
			}
		}
		e.g.Expect(found).NotTo(BeEmpty(), "no send span of %s", d.Name)
		for _, s := range found {
			e.g.Expect(s.SpanKind).To(Equal(trace.SpanKindClient))
			e.g.Expect(s.Parent.SpanID()).To(Equal(tracing.SpanIDOf(string(d.UID))), "a call's span is its Delegation's child")
			if hasAttr(s, "tether.outcome", "ok") {
				e.g.Expect(hasAttr(s, "a2a.task_id", d.Status.TaskID)).To(BeTrue(), "an answered send names its task")
			}
		}
		return found
	}
	// agentSpan is the agent's one span for the task, continuing the
	// traceparent of one of the sends (the agent started the task once).
	agentSpan := func(calls []tracetest.SpanStub) tracetest.SpanStub {
		var found []tracetest.SpanStub
		for _, s := range byID {
			for _, call := range calls {
				if s.Name == "agent task" && s.Parent.SpanID() == call.SpanContext.SpanID() {
					found = append(found, s)
				}
			}
		}
		e.g.Expect(found).To(HaveLen(1), "agent spans under the sends %v", calls)
		return found[0]
	}

	rootSpan := delegationSpan(root)
	e.g.Expect(rootSpan.Parent.IsValid()).To(BeFalse(), "the root's span starts the trace")
	planSpan := delegationSpan(plan)
	e.g.Expect(planSpan.Parent.SpanID()).To(Equal(rootSpan.SpanContext.SpanID()), "a GitOps child's span is under its parent's")
	orchestratorSpan := agentSpan(sendSpans(plan))
	for i := range kids {
		kid := e.get(kids[i].Name)
		e.g.Expect(kid.Annotations).To(HaveKey(tracing.TraceparentAnnotation), "agentkit passes its span to the child")
		kidSpan := delegationSpan(kid)
		e.g.Expect(parentOf(kidSpan).SpanContext.SpanID()).To(Equal(orchestratorSpan.SpanContext.SpanID()),
			"the child %s the orchestrator created is under the orchestrator's span", kid.Name)
		agentSpan(sendSpans(kid))
	}
}

func hasAttr(s tracetest.SpanStub, key, value string) bool {
	for _, a := range s.Attributes {
		if a.Key == attribute.Key(key) && a.Value.AsString() == value {
			return true
		}
	}
	return false
}
