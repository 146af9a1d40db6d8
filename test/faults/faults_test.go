/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package faults

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Until armed the proxy passes everything on; armed at rate 1 it fails every
// call, each fault as it says: refused and unavailable calls never reach the
// agent, lost ones reach it but their answer does not come back, delayed
// ones reach it and are answered.
func TestProxyFailsCallsAsEachFaultSays(t *testing.T) {
	g := NewWithT(t)
	var reached atomic.Int64
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		_, _ = w.Write([]byte("answer"))
	}))
	defer agent.Close()
	p := NewProxy(agent.URL, Options{Rate: 1, Seed: 7, MaxDelay: 10 * time.Millisecond})
	defer p.Close()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	call := func() (status int, err error) {
		resp, err := c.Post(p.URL()+"/rpc", "application/json", strings.NewReader(`{}`))
		if err != nil {
			return 0, err
		}
		defer func() { _ = resp.Body.Close() }()
		return resp.StatusCode, nil
	}
	status, err := call()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(status).To(Equal(http.StatusOK), "passed on before Arm")
	g.Expect(reached.Load()).To(BeEquivalentTo(1))

	p.Arm()
	const n = 80
	var failed, unavailable, answered int
	for range n {
		status, err := call()
		switch {
		case err != nil:
			failed++
		case status == http.StatusServiceUnavailable:
			unavailable++
		case status == http.StatusOK:
			answered++
		}
	}
	calls, faults := p.Counts()
	g.Expect(calls).To(Equal(n))
	for f := range faultKinds {
		g.Expect(faults[f]).To(BeNumerically(">", 0), "fault %s drawn", f)
	}
	g.Expect(faults[Refuse]+faults[Unavailable]+faults[Lose]+faults[Delay]).To(Equal(n), "rate 1 fails every call")
	g.Expect(failed).To(Equal(faults[Refuse]+faults[Lose]), "refused and lost calls end without an answer")
	g.Expect(unavailable).To(Equal(faults[Unavailable]))
	g.Expect(answered).To(Equal(faults[Delay]), "delayed calls are answered")
	g.Expect(reached.Load()).To(BeEquivalentTo(1+faults[Lose]+faults[Delay]), "lost and delayed calls reach the agent")
}

func TestCount(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(created.Add(d)); return &t }
	delegation := func(name string, phase v1alpha1.Phase, task string, done *metav1.Time) v1alpha1.Delegation {
		return v1alpha1.Delegation{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created},
			Spec:       v1alpha1.DelegationSpec{Timeout: &metav1.Duration{Duration: time.Minute}},
			Status:     v1alpha1.DelegationStatus{Phase: phase, TaskID: task, CompletionTime: done},
		}
	}
	for _, tc := range []struct {
		name  string
		d     v1alpha1.Delegation
		tasks []Task
		want  Tally
	}{
		{"succeeded with its one task", delegation("a", v1alpha1.PhaseSucceeded, "t1", at(time.Second)),
			[]Task{{ID: "t1"}}, Tally{Delegations: 1}},
		{"a message run twice", delegation("a", v1alpha1.PhaseSucceeded, "t2", at(time.Second)),
			[]Task{{ID: "t1"}, {ID: "t2"}}, Tally{Delegations: 1, Duplicates: 1, LostOutcomes: 1}},
		{"failed while its task ran", delegation("a", v1alpha1.PhaseFailed, "", at(time.Second)),
			[]Task{{ID: "t1"}}, Tally{Delegations: 1, LostOutcomes: 1}},
		{"given up without a task at the agent", delegation("a", v1alpha1.PhaseFailed, "", at(time.Second)),
			nil, Tally{Delegations: 1, NeedlessGiveUps: 1}},
		{"settled after its timeout", delegation("a", v1alpha1.PhaseSucceeded, "t1", at(2*time.Minute)),
			[]Task{{ID: "t1"}}, Tally{Delegations: 1, PastDeadline: 1}},
		{"still running", delegation("a", v1alpha1.PhaseRunning, "t1", nil),
			[]Task{{ID: "t1"}}, Tally{Delegations: 1, LostOutcomes: 1, PastDeadline: 1, Unsettled: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Count([]v1alpha1.Delegation{tc.d}, map[string][]Task{"a": tc.tasks})
			g.Expect(got.Clean()).To(Equal(tc.want.Clean()))
			got.Examples = nil
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// A give-back is told apart from other Lease writes whichever encoding
// client-go sent it in.
func TestGivesBackReadsJSONAndProtobuf(t *testing.T) {
	g := NewWithT(t)
	proto, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	g.Expect(ok).To(BeTrue())
	json, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	g.Expect(ok).To(BeTrue())
	for _, tc := range []struct {
		holder *string
		want   bool
	}{{nil, true}, {ptr.To(""), true}, {ptr.To("operator-0"), false}} {
		lease := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: tc.holder, LeaseDurationSeconds: ptr.To[int32](1)}}
		for _, info := range []runtime.SerializerInfo{proto, json} {
			body, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, coordinationv1.SchemeGroupVersion), lease)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(givesBack(body)).To(Equal(tc.want), "%s with holder %v", info.MediaType, tc.holder)
		}
	}
	g.Expect(givesBack([]byte(`{"metadata":{"annotations":{"a":"b"}}}`))).To(BeFalse(), "a patch of the metadata")
}

// A partition with Lose lets every call reach the agent (with the Host the
// caller used) and drops every answer, armed or not, until it is over.
func TestProxyPartitionLosesEveryAnswerForAWhile(t *testing.T) {
	g := NewWithT(t)
	var reached atomic.Int64
	var host atomic.Value
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		host.Store(r.Host)
		_, _ = w.Write([]byte("answer"))
	}))
	defer agent.Close()
	p := NewProxy(agent.URL, Options{})
	defer p.Close()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	call := func() error {
		resp, err := c.Post(p.URL()+"/rpc", "application/json", strings.NewReader(`{}`))
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	p.Partition(Lose, time.Hour)
	for range 3 {
		g.Expect(call()).To(HaveOccurred(), "no answer during the partition")
	}
	g.Expect(reached.Load()).To(BeEquivalentTo(3), "every call reached the agent")
	g.Expect(host.Load()).To(Equal(strings.TrimPrefix(p.URL(), "http://")), "the agent sees the caller's Host")
	_, faults := p.Counts()
	g.Expect(faults[Lose]).To(Equal(3))
	p.Partition(Lose, 0)
	g.Expect(call()).To(Succeed(), "answered again once the partition is over")
	g.Expect(reached.Load()).To(BeEquivalentTo(4))
}
