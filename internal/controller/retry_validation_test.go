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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// spec.retry is checked at admission, and fixed once the task started.
func TestAdmissionRefusesBadRetryPolicies(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	eleven, zero := int32(11), int32(0)
	tests := []struct {
		name  string
		retry v1alpha1.RetryPolicy
		want  string
	}{
		{"no attempt", v1alpha1.RetryPolicy{MaxAttempts: 0}, "spec.retry.maxAttempts"},
		{"more than ten attempts", v1alpha1.RetryPolicy{MaxAttempts: 11}, "spec.retry.maxAttempts"},
		{"a class never retried", v1alpha1.RetryPolicy{MaxAttempts: 2, On: []v1alpha1.RetryClass{"InvalidRequest"}}, `Unsupported value: "InvalidRequest"`},
		{"a class that does not exist", v1alpha1.RetryPolicy{MaxAttempts: 2, On: []v1alpha1.RetryClass{"Flaky"}}, `Unsupported value: "Flaky"`},
		{"a class twice", v1alpha1.RetryPolicy{MaxAttempts: 2, On: []v1alpha1.RetryClass{"Transient", "Transient"}}, "Duplicate value"},
		{"initial above max", v1alpha1.RetryPolicy{MaxAttempts: 2, Backoff: &v1alpha1.Backoff{Initial: dur(time.Minute), Max: dur(time.Second)}},
			"backoff.initial must not exceed backoff.max"},
		{"initial above an hour", v1alpha1.RetryPolicy{MaxAttempts: 2, Backoff: &v1alpha1.Backoff{Initial: dur(2 * time.Hour)}},
			"backoff.initial must be between 0s and 1h"},
		{"max above an hour", v1alpha1.RetryPolicy{MaxAttempts: 2, Backoff: &v1alpha1.Backoff{Max: dur(2 * time.Hour)}},
			"backoff.max must be between 0s and 1h"},
		{"factor above ten", v1alpha1.RetryPolicy{MaxAttempts: 2, Backoff: &v1alpha1.Backoff{Factor: &eleven}}, "spec.retry.backoff.factor"},
		{"factor zero", v1alpha1.RetryPolicy{MaxAttempts: 2, Backoff: &v1alpha1.Backoff{Factor: &zero}}, "spec.retry.backoff.factor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: v1alpha1.DelegationSpec{
				AgentRef: &v1alpha1.AgentRef{Name: "agent"}, Message: &v1alpha1.Message{Text: "hi"}, Retry: &tt.retry,
			}}
			err := k8sClient.Create(context.Background(), d)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}

	g := NewWithT(t)
	three := int32(3)
	d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "good"}, Spec: v1alpha1.DelegationSpec{
		AgentRef: &v1alpha1.AgentRef{Name: "agent"}, Message: &v1alpha1.Message{Text: "hi"},
		Retry: &v1alpha1.RetryPolicy{MaxAttempts: 3, On: []v1alpha1.RetryClass{"Transient", "Unreachable"},
			Backoff: &v1alpha1.Backoff{Initial: dur(0), Max: dur(time.Minute), Factor: &three}},
	}}
	g.Expect(k8sClient.Create(context.Background(), d)).To(Succeed())
	d.Spec.Retry.MaxAttempts = 5
	g.Expect(k8sClient.Update(context.Background(), d)).To(Succeed(), "spec.retry may change before the task starts")
	now := metav1.Now()
	d.Status.StartTime = &now
	g.Expect(k8sClient.Status().Update(context.Background(), d)).To(Succeed())
	d.Spec.Retry.MaxAttempts = 2
	err := k8sClient.Update(context.Background(), d)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("spec.retry is immutable once the task started"))
}
