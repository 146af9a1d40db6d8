/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// delegationManifest is a valid Delegation as raw JSON-like data, so a test
// can send what the typed client would drop (empty strings, nulls, arrays).
func delegationManifest(ns string, message map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Delegation",
		"metadata": map[string]any{"namespace": ns, "generateName": "bad-"},
		"spec":     map[string]any{"agentRef": map[string]any{"name": "agent"}, "message": message},
	}}
	return u
}

// Every invalid message is refused at admission with the message it gets.
func TestAdmissionRefusesBadMessages(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	part := func(p map[string]any) map[string]any { return map[string]any{"parts": []any{p}} }
	tests := []struct {
		name    string
		message map[string]any
		want    string
	}{
		{"empty text", map[string]any{"text": ""}, "spec.message.text: Invalid value: \"\": spec.message.text in body should be at least 1 chars long"},
		{"a part with text and url", part(map[string]any{"text": "a", "url": "https://x.example/a"}), "a part holds exactly one of text, url or data"},
		{"a part with text and data", part(map[string]any{"text": "a", "data": map[string]any{"k": "v"}}), "a part holds exactly one of text, url or data"},
		{"a part with url and data", part(map[string]any{"url": "https://x.example/a", "data": map[string]any{}}), "a part holds exactly one of text, url or data"},
		{"a part with all three", part(map[string]any{"text": "a", "url": "https://x.example/a", "data": map[string]any{}}), "a part holds exactly one of text, url or data"},
		{"a part with none", part(map[string]any{"mediaType": "text/plain"}), "a part holds exactly one of text, url or data"},
		{"a part with data: null", part(map[string]any{"data": nil}), "a part holds exactly one of text, url or data"},
		{"a part with a data array", part(map[string]any{"data": []any{1, 2}}), "spec.message.parts[0].data: Invalid value: \"array\": spec.message.parts[0].data in body must be of type object"},
		{"a part with data: a string", part(map[string]any{"data": "x"}), "spec.message.parts[0].data in body must be of type object"},
		{"a part with empty text", part(map[string]any{"text": ""}), "spec.message.parts[0].text in body should be at least 1 chars long"},
		{"a part with an empty url", part(map[string]any{"url": ""}), "spec.message.parts[0].url in body should be at least 1 chars long"},
		{"a reserved metadata key", map[string]any{"text": "hi", "metadata": map[string]any{"https://tether.dev/a2a/delegation": "{}"}},
			"metadata keys under https://tether.dev/ are reserved for the operator"},
		{"a reserved metadata key of another extension", map[string]any{"text": "hi", "metadata": map[string]any{"https://tether.dev/anything": "x"}},
			"metadata keys under https://tether.dev/ are reserved for the operator"},
		{"an empty metadata key", map[string]any{"text": "hi", "metadata": map[string]any{"": "x"}}, "metadata keys must be 1 to 256 characters"},
		{"a long metadata key", map[string]any{"text": "hi", "metadata": map[string]any{strings.Repeat("k", 257): "x"}}, "metadata keys must be 1 to 256 characters"},
		{"a long metadata value", map[string]any{"text": "hi", "metadata": map[string]any{"k": strings.Repeat("v", 4097)}}, "metadata values must be at most 4096 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := k8sClient.Create(context.Background(), delegationManifest(ns, tt.message))
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}

	// What the rules allow: one of each kind of part, data as an object,
	// metadata at its bounds and under other domains.
	g := NewWithT(t)
	ok := delegationManifest(ns, map[string]any{"text": "hi", "parts": []any{
		map[string]any{"text": "a"}, map[string]any{"url": "https://x.example/a"},
		map[string]any{"data": map[string]any{"nested": map[string]any{"n": 1}}}, map[string]any{"data": map[string]any{}},
	}, "metadata": map[string]any{strings.Repeat("k", 256): strings.Repeat("v", 4096), "https://example.com/tether.dev/": "x"}})
	g.Expect(k8sClient.Create(context.Background(), ok)).To(Succeed())
	var d v1alpha1.Delegation
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(ok.Object, &d)).To(Succeed())
	g.Expect(string(d.Spec.Message.Parts[2].Data.Raw)).To(MatchJSON(`{"nested":{"n":1}}`), "data is kept as written")
}

// Once a task started, what shaped it cannot change; before, it can.
func TestAdmissionFreezesWhatShapedAStartedTask(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	g := NewWithT(t)
	ctx := context.Background()
	create := func(name string, mutate func(*v1alpha1.Delegation)) *v1alpha1.Delegation {
		d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.DelegationSpec{
			AgentRef: &v1alpha1.AgentRef{Name: "agent"}, Message: &v1alpha1.Message{Text: "hi"},
			Tenant: "t1", Skill: "s1", Lease: &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: time.Minute}},
		}}
		if mutate != nil {
			mutate(d)
		}
		g.Expect(k8sClient.Create(ctx, d)).To(Succeed())
		return d
	}
	update := func(d *v1alpha1.Delegation, mutate func(*v1alpha1.Delegation)) error {
		cur := &v1alpha1.Delegation{}
		g.Expect(k8sClient.Get(ctx, clientKey(d), cur)).To(Succeed())
		mutate(cur)
		return k8sClient.Update(ctx, cur)
	}
	markStatus := func(d *v1alpha1.Delegation, mutate func(*v1alpha1.DelegationStatus)) {
		cur := &v1alpha1.Delegation{}
		g.Expect(k8sClient.Get(ctx, clientKey(d), cur)).To(Succeed())
		mutate(&cur.Status)
		g.Expect(k8sClient.Status().Update(ctx, cur)).To(Succeed())
	}

	// Not started yet: the owner may still change the shape.
	pending := create("pending", nil)
	g.Expect(update(pending, func(d *v1alpha1.Delegation) {
		d.Spec.Tenant, d.Spec.Skill, d.Spec.Lease = "t2", "s2", nil
		d.Spec.ParentClosePolicy = v1alpha1.ParentClosePolicyDetach
		d.Spec.TaskID = "adopt-me"
	})).To(Succeed())

	now := metav1.Now()
	for name, started := range map[string]func(*v1alpha1.DelegationStatus){
		"send-started": func(s *v1alpha1.DelegationStatus) { s.SendStarted = &now },
		"task-id":      func(s *v1alpha1.DelegationStatus) { s.TaskID = "task-1" },
	} {
		d := create(name, nil)
		markStatus(d, started)
		const frozen = "spec.tenant, spec.lease, spec.parentClosePolicy and spec.skill are immutable once the task started"
		for change, mutate := range map[string]func(*v1alpha1.Delegation){
			"tenant changed":            func(d *v1alpha1.Delegation) { d.Spec.Tenant = "t2" },
			"tenant removed":            func(d *v1alpha1.Delegation) { d.Spec.Tenant = "" },
			"skill changed":             func(d *v1alpha1.Delegation) { d.Spec.Skill = "s2" },
			"lease changed":             func(d *v1alpha1.Delegation) { d.Spec.Lease.TTL = metav1.Duration{Duration: time.Hour} },
			"lease removed":             func(d *v1alpha1.Delegation) { d.Spec.Lease = nil },
			"parentClosePolicy changed": func(d *v1alpha1.Delegation) { d.Spec.ParentClosePolicy = v1alpha1.ParentClosePolicyDetach },
		} {
			err := update(d, mutate)
			g.Expect(err).To(HaveOccurred(), "%s: %s", name, change)
			g.Expect(err.Error()).To(ContainSubstring(frozen), "%s: %s", name, change)
		}
		err := update(d, func(d *v1alpha1.Delegation) { d.Spec.TaskID = "someone-elses" })
		g.Expect(err).To(MatchError(ContainSubstring("spec.taskID cannot be added once the message was sent")), name)
		// What stays allowed on a started task.
		g.Expect(update(d, func(d *v1alpha1.Delegation) { d.Spec.Replies = replies("more") })).To(Succeed(), name)
		g.Expect(update(d, func(d *v1alpha1.Delegation) { d.Labels = map[string]string{"team": "a"} })).To(Succeed(), name)
	}

	// A task that started by adoption keeps its taskID rules; starting is
	// also recorded by startTime for groups.
	group := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "group"}}
	g.Expect(k8sClient.Create(ctx, group)).To(Succeed())
	markStatus(group, func(s *v1alpha1.DelegationStatus) { s.StartTime = &now })
	g.Expect(update(group, func(d *v1alpha1.Delegation) { d.Spec.ParentClosePolicy = v1alpha1.ParentClosePolicyDetach })).
		To(MatchError(ContainSubstring("immutable once the task started")))

	detached := create("detached", func(d *v1alpha1.Delegation) { d.Spec.Detach = true })
	g.Expect(update(detached, func(d *v1alpha1.Delegation) { d.Spec.Detach = false })).
		To(MatchError(ContainSubstring("detach cannot be undone")))
}
