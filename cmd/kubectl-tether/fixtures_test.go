/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"regexp"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// now is the fixed clock every golden output is rendered at.
var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// dlg builds a Delegation created ago before now, with agent and phase set.
func dlg(name, agent string, phase v1alpha1.Phase, ago time.Duration, opts ...func(*v1alpha1.Delegation)) v1alpha1.Delegation {
	d := v1alpha1.Delegation{}
	d.Name, d.Namespace = name, "default"
	d.CreationTimestamp = metav1.NewTime(now.Add(-ago))
	if agent != "" {
		d.Spec.AgentRef = &v1alpha1.AgentRef{Name: agent}
	}
	d.Status.Phase = phase
	for _, o := range opts {
		o(&d)
	}
	return d
}

func parent(name string) func(*v1alpha1.Delegation) {
	return func(d *v1alpha1.Delegation) { d.Spec.ParentRef = &v1alpha1.LocalRef{Name: name} }
}

func task(id string) func(*v1alpha1.Delegation) {
	return func(d *v1alpha1.Delegation) { d.Status.TaskID = id }
}

func outcome(reason string, class v1alpha1.FailureClass, message string) func(*v1alpha1.Delegation) {
	return func(d *v1alpha1.Delegation) {
		d.Status.Outcome = &v1alpha1.Outcome{Reason: reason, FailureClass: class, Message: message}
	}
}

func budget(left, spent v1alpha1.Meters) func(*v1alpha1.Delegation) {
	return func(d *v1alpha1.Delegation) { d.Status.Budget = &v1alpha1.BudgetStatus{Left: left, Spent: spent} }
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

func stripANSI(s string) string { return ansi.ReplaceAllString(s, "") }

// fakeClient serves objs like an API server would, resourceVersion checks included.
func fakeClient(funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.Delegation{}).WithInterceptorFuncs(funcs).Build()
}

func replies(texts ...string) []v1alpha1.Reply {
	out := make([]v1alpha1.Reply, 0, len(texts))
	for _, t := range texts {
		out = append(out, v1alpha1.Reply{Text: t})
	}
	return out
}
