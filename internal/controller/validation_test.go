/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// The CRDs refuse bad input at admission with a message a person can act on.
func TestAdmissionRefusesBadDelegations(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	valid := func(name string) *v1alpha1.Delegation {
		return &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.DelegationSpec{
			AgentRef: &v1alpha1.AgentRef{Name: "agent"}, Message: &v1alpha1.Message{Text: "hi"},
		}}
	}
	tests := []struct {
		name   string
		mutate func(*v1alpha1.Delegation)
		want   string
	}{
		{"parentRef to itself", func(d *v1alpha1.Delegation) { d.Spec.ParentRef = &v1alpha1.LocalRef{Name: d.Name} },
			"spec.parentRef cannot name the Delegation itself"},
		{"lease below 1s", func(d *v1alpha1.Delegation) {
			d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: 500 * time.Millisecond}}
		}, "lease.ttl must be between 1s and 1h"},
		{"lease above 1h", func(d *v1alpha1.Delegation) {
			d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: 2 * time.Hour}}
		}, "lease.ttl must be between 1s and 1h"},
		{"negative meter", func(d *v1alpha1.Delegation) {
			d.Spec.Budget = &v1alpha1.BudgetSpec{Meters: v1alpha1.Meters{"tokens": -1}}
		}, "budget meters must not be negative"},
		{"budget timeout and deadline", func(d *v1alpha1.Delegation) {
			d.Spec.Budget = &v1alpha1.BudgetSpec{Timeout: &metav1.Duration{Duration: time.Minute}, Deadline: &metav1.Time{Time: time.Now()}}
		}, "budget.timeout and budget.deadline are mutually exclusive"},
		{"cancel and detach", func(d *v1alpha1.Delegation) { d.Spec.Cancel, d.Spec.Detach = true, true },
			"cancel and detach are mutually exclusive"},
		{"a group with a message", func(d *v1alpha1.Delegation) { d.Spec.AgentRef = nil },
			"a group (no agentRef) cannot have message, taskID, lease, replies or skill"},
		{"a task without message or task id", func(d *v1alpha1.Delegation) { d.Spec.Message = nil },
			"a Delegation with agentRef needs a message, or a taskID to adopt"},
		{"an empty message", func(d *v1alpha1.Delegation) { d.Spec.Message = &v1alpha1.Message{} },
			"message needs text or at least one part"},
		{"an unknown parent close policy", func(d *v1alpha1.Delegation) { d.Spec.ParentClosePolicy = "Abandon" },
			`Unsupported value: "Abandon"`},
		{"a zero timeout", func(d *v1alpha1.Delegation) { d.Spec.Timeout = &metav1.Duration{} },
			"timeout must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := valid("bad")
			tt.mutate(d)
			err := k8sClient.Create(context.Background(), d)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}
}

// Fields that started a task cannot change under it.
func TestAdmissionRefusesChangesToWhatWasSent(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	g := NewWithT(t)
	parent := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "parent"}}
	g.Expect(k8sClient.Create(context.Background(), parent)).To(Succeed())
	orig := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "task"}, Spec: v1alpha1.DelegationSpec{
		AgentRef: &v1alpha1.AgentRef{Name: "agent"}, ParentRef: &v1alpha1.LocalRef{Name: "parent"},
		Message: &v1alpha1.Message{Text: "hi"}, Replies: replies("one", "two"), Cancel: true,
	}}
	g.Expect(k8sClient.Create(context.Background(), orig)).To(Succeed())

	tests := []struct {
		name   string
		mutate func(*v1alpha1.Delegation)
		want   string
	}{
		{"message", func(d *v1alpha1.Delegation) { d.Spec.Message.Text = "other" }, "message is immutable once set"},
		{"parentRef", func(d *v1alpha1.Delegation) { d.Spec.ParentRef.Name = "other" }, "parentRef is immutable"},
		{"agentRef", func(d *v1alpha1.Delegation) { d.Spec.AgentRef.Name = "other" }, "agentRef is immutable"},
		{"replies rewritten", func(d *v1alpha1.Delegation) { d.Spec.Replies = replies("one") }, "replies can only be appended"},
		{"a reply inserted before the others", func(d *v1alpha1.Delegation) { d.Spec.Replies = replies("zero", "one", "two") },
			"replies can only be appended"},
		{"replies reordered", func(d *v1alpha1.Delegation) { d.Spec.Replies = replies("two", "one", "three") }, "replies can only be appended"},
		{"a sent reply's metadata changed", func(d *v1alpha1.Delegation) {
			d.Spec.Replies[0].Metadata = map[string]apiextensionsv1.JSON{"k": {Raw: []byte(`"v"`)}}
		}, "replies can only be appended"},
		{"a reply without text or parts", func(d *v1alpha1.Delegation) {
			d.Spec.Replies = append(d.Spec.Replies, v1alpha1.Reply{Extensions: []string{"https://example.com/ext"}})
		}, "a reply needs text or at least one part"},
		{"an extension that is not a URI", func(d *v1alpha1.Delegation) {
			d.Spec.Replies = append(d.Spec.Replies, v1alpha1.Reply{Text: "ok", Extensions: []string{"a, b"}})
		}, "spec.replies[2].extensions[0]"},
		{"cancel undone", func(d *v1alpha1.Delegation) { d.Spec.Cancel = false }, "cancel cannot be undone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := &v1alpha1.Delegation{}
			g.Expect(k8sClient.Get(context.Background(), clientKey(orig), d)).To(Succeed())
			tt.mutate(d)
			err := k8sClient.Update(context.Background(), d)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}

	d := &v1alpha1.Delegation{}
	g.Expect(k8sClient.Get(context.Background(), clientKey(orig), d)).To(Succeed())
	d.Spec.Replies = append(d.Spec.Replies, v1alpha1.Reply{
		Parts:      []v1alpha1.Part{{Data: &runtime.RawExtension{Raw: []byte(`{"approved":true}`)}}},
		Metadata:   map[string]apiextensionsv1.JSON{"https://example.com/ext/approval/v1": {Raw: []byte(`{"decision":"approve"}`)}},
		Extensions: []string{"https://example.com/ext/approval/v1"},
	})
	g.Expect(k8sClient.Update(context.Background(), d)).To(Succeed(), "appending a structured reply is allowed")
	d.Spec.Replies = append(d.Spec.Replies, v1alpha1.Reply{Text: "four"})
	g.Expect(k8sClient.Update(context.Background(), d)).To(Succeed(), "appending after a structured reply is allowed")
}

func replies(texts ...string) []v1alpha1.Reply {
	out := make([]v1alpha1.Reply, 0, len(texts))
	for _, t := range texts {
		out = append(out, v1alpha1.Reply{Text: t})
	}
	return out
}

func TestAdmissionRefusesBadAgents(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	tests := []struct {
		name string
		spec v1alpha1.AgentSpec
		want string
	}{
		{"not an http URL", v1alpha1.AgentSpec{URL: "ftp://agent"}, "url must be an http:// or https:// URL"},
		{"poll too often", v1alpha1.AgentSpec{URL: "http://agent", PollInterval: &metav1.Duration{Duration: time.Millisecond}},
			"pollInterval must be between 100ms and 1h"},
		{"a header without a secret key", v1alpha1.AgentSpec{URL: "http://agent", Headers: []v1alpha1.AgentHeader{{Name: "Authorization"}}},
			"spec.headers[0].valueFrom.name"},
		{"an allowed origin with a path", v1alpha1.AgentSpec{URL: "http://agent", AllowedOrigins: []string{"http://other/a2a"}},
			"spec.allowedOrigins[0]"},
		{"an http allowed origin for an https agent", v1alpha1.AgentSpec{URL: "https://agent", AllowedOrigins: []string{"http://other"}},
			"allowedOrigins must be https when url is https"},
		{"an http card for an https agent", v1alpha1.AgentSpec{URL: "https://agent", CardURL: "http://agent/card.json"},
			"cardURL must be https when url is https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := k8sClient.Create(context.Background(), &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: tt.spec})
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}
}
