/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package argocd

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tether-dev/tether/api/v1alpha1"
)

type health struct{ status, message string }

func TestDelegationHealth(t *testing.T) {
	outcome := func(reason string, class v1alpha1.FailureClass, message string) *v1alpha1.Outcome {
		return &v1alpha1.Outcome{Reason: reason, FailureClass: class, Message: message}
	}
	tests := []struct {
		name     string
		status   *v1alpha1.DelegationStatus // nil: none written yet
		observed int64                      // 0: the current generation
		want     health
	}{
		{name: "no status yet", want: health{"Progressing", "Waiting for the operator"}},
		{name: "Pending", status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhasePending,
			Outcome: outcome("WaitingForParent", "", "parent plan is Pending")},
			want: health{"Progressing", "Pending (WaitingForParent): parent plan is Pending"}},
		{name: "Running", status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning,
			Outcome: outcome("Sent", "", "")},
			want: health{"Progressing", "Running (Sent)"}},
		{name: "Succeeded", status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseSucceeded,
			Outcome: outcome("Completed", "", "3 artifacts")},
			want: health{"Healthy", "Succeeded (Completed): 3 artifacts"}},
		{name: "Failed with a reason", status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseFailed,
			Outcome: outcome("DeadlineExceeded", v1alpha1.FailureBudgetExhausted, "timeout 10m0s passed")},
			want: health{"Degraded", "Failed (DeadlineExceeded): timeout 10m0s passed"}},
		{name: "Failed with only a class", status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseFailed,
			Outcome: outcome("", v1alpha1.FailureUnreachable, "no task id came back")},
			want: health{"Degraded", "Failed (Unreachable): no task id came back"}},
		{name: "Failed without outcome", status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseFailed},
			want: health{"Degraded", "Failed"}},
		{name: "Canceled", status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseCanceled,
			Outcome: outcome("ParentDeleted", "", "parent plan was deleted")},
			want: health{"Degraded", "Canceled (ParentDeleted): parent plan was deleted"}},
		{name: "InputRequired", status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseInputRequired,
			Outcome: outcome("InputRequired", "", "which region?")},
			want: health{"Suspended", "InputRequired: which region?"}},
		{name: "AuthRequired", status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseAuthRequired},
			want: health{"Suspended", "AuthRequired"}},
		{name: "Detached", status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseDetached,
			Outcome: outcome("Detached", "", "spec.detach is true")},
			want: health{"Healthy", "detached: task no longer followed"}},
		{name: "waiting for a retry", status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning, Attempt: 2, MaxAttempts: 3,
			Outcome: outcome("RetryScheduled", "", "attempt 2/3 at 2026-12-03T09:00:00Z")},
			want: health{"Progressing", "Running (RetryScheduled), attempt 2/3: attempt 2/3 at 2026-12-03T09:00:00Z"}},
		{name: "the last attempt failed", status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseFailed, Attempt: 3, MaxAttempts: 3,
			Outcome: outcome("RemoteFailed", v1alpha1.FailureTransient, "attempt 3/3: busy")},
			want: health{"Degraded", "Failed (RemoteFailed), attempt 3/3: attempt 3/3: busy"}},
		{name: "a single attempt shows no count", status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning, Attempt: 1, MaxAttempts: 1,
			Outcome: outcome("Sent", "", "")},
			want: health{"Progressing", "Running (Sent)"}},
		{name: "Succeeded but a newer generation not yet observed", observed: 2,
			status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseSucceeded},
			want:   health{"Progressing", "Waiting for the operator to observe generation 3"}},
		{name: "Failed but a newer generation not yet observed", observed: 1,
			status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseFailed},
			want:   health{"Progressing", "Waiting for the operator to observe generation 3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := &v1alpha1.Delegation{TypeMeta: metav1.TypeMeta{APIVersion: "delegation.tether.dev/v1alpha1", Kind: "Delegation"}}
			d.Name, d.Namespace, d.Generation = "task", "default", 3
			if tc.status != nil {
				d.Status = *tc.status
				d.Status.ObservedGeneration = d.Generation
				if tc.observed != 0 {
					d.Status.ObservedGeneration = tc.observed
				}
			}
			g.Expect(runHealth(t, DelegationHealth, d)).To(Equal(tc.want))
		})
	}
}

func TestAgentHealth(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason, message string) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: status, Reason: reason, Message: message}}
	}
	tests := []struct {
		name     string
		status   *v1alpha1.AgentStatus
		observed int64
		want     health
	}{
		{name: "no status yet", want: health{"Progressing", "Waiting for the agent card to be read"}},
		{name: "Ready", status: &v1alpha1.AgentStatus{Conditions: ready(metav1.ConditionTrue, "CardRead", "JSONRPC 1.0")},
			want: health{"Healthy", "JSONRPC 1.0"}},
		{name: "not Ready", status: &v1alpha1.AgentStatus{Conditions: ready(metav1.ConditionFalse, "CardUnreachable", "GET card: 503")},
			want: health{"Degraded", "GET card: 503"}},
		{name: "not Ready without a message", status: &v1alpha1.AgentStatus{Conditions: ready(metav1.ConditionFalse, "CardUnreachable", "")},
			want: health{"Degraded", "CardUnreachable"}},
		{name: "Ready unknown", status: &v1alpha1.AgentStatus{Conditions: ready(metav1.ConditionUnknown, "Refreshing", "reading card")},
			want: health{"Progressing", "reading card"}},
		{name: "no Ready condition", status: &v1alpha1.AgentStatus{Conditions: []metav1.Condition{
			{Type: "Other", Status: metav1.ConditionTrue, Reason: "X"}}},
			want: health{"Progressing", "Waiting for the agent card to be read"}},
		{name: "Ready but a newer generation not yet observed", observed: 1,
			status: &v1alpha1.AgentStatus{Conditions: ready(metav1.ConditionTrue, "CardRead", "")},
			want:   health{"Progressing", "Waiting for the operator to observe generation 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			a := &v1alpha1.Agent{TypeMeta: metav1.TypeMeta{APIVersion: "delegation.tether.dev/v1alpha1", Kind: "Agent"}}
			a.Name, a.Namespace, a.Generation = "echo", "default", 2
			a.Spec.URL = "http://echo.default.svc"
			if tc.status != nil {
				a.Status = *tc.status
				a.Status.ObservedGeneration = a.Generation
				if tc.observed != 0 {
					a.Status.ObservedGeneration = tc.observed
				}
			}
			g.Expect(runHealth(t, AgentHealth, a)).To(Equal(tc.want))
		})
	}
}

// TestConfigMapSnippetMatchesScripts keeps argocd-cm.yaml from drifting from the
// .lua files: users copy the snippet, tests run the files.
func TestConfigMapSnippetMatchesScripts(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile("argocd-cm.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var cm corev1.ConfigMap
	g.Expect(yaml.UnmarshalStrict(raw, &cm)).To(Succeed())
	g.Expect(cm.Kind).To(Equal("ConfigMap"))
	g.Expect(cm.Name).To(Equal("argocd-cm"))
	g.Expect(cm.Data).To(Equal(HealthChecks()))
}

// runHealth runs a health script the way Argo CD does: without the string, io
// and os libraries, with a one-second budget, obj decoded from the object's JSON.
func runHealth(t *testing.T, script string, obj any) health {
	t.Helper()
	g := NewWithT(t)
	raw, err := json.Marshal(obj)
	g.Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	g.Expect(u.UnmarshalJSON(raw)).To(Succeed())

	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{
		lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable,
	} {
		g.Expect(l.CallByParam(lua.P{Fn: l.NewFunction(open), Protect: true}, lua.LString(name))).To(Succeed())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, u.Object))
	g.Expect(l.DoString(script)).To(Succeed())

	ret, ok := l.Get(-1).(*lua.LTable)
	g.Expect(ok).To(BeTrue(), "the script returns a table")
	return health{status: lua.LVAsString(ret.RawGetString("status")), message: lua.LVAsString(ret.RawGetString("message"))}
}

// toLua converts an unstructured value as Argo CD does before running a script.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []any:
		arr := l.CreateTable(len(v), 0)
		for _, item := range v {
			arr.Append(toLua(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(v))
		for k, item := range v {
			tbl.RawSetString(k, toLua(l, item))
		}
		return tbl
	}
	return lua.LNil
}
