/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/shrinkmap"
)

// Following by streaming: a running task at an agent whose card says it
// streams is also followed with SubscribeToTask. Each change of state it
// reports makes the task due at once, and the scheduler's read (the same
// read a poll makes) brings what status shows. The end is the exception:
// when the stream brought the whole ended task (a2a.StreamEvent.Ended), it
// is the read's answer at once, and the end costs no read. Renewals and
// polls stay on the scheduler; a stream event renews no lease.

// Defaults and bounds for streams.
const (
	// DefaultMaxStreams is an Agent's spec.maxStreams when unset.
	DefaultMaxStreams = 64
	// streamFailures is how many streams in a row may break without an
	// event before the task falls back to polls.
	streamFailures = 3
	// maxStreamEvents cuts a stream that sends this many events: a task
	// does not change state that often; an endless stream is a lie.
	maxStreamEvents = 1000
	// streamIdleTimeout cuts a stream that brought no event for this long:
	// an agent that drips one event for minutes holds a place among the
	// streams; the task is subscribed again after the back-off.
	streamIdleTimeout = time.Minute
)

// resubscribeBackoff is the wait before a task whose stream closed is
// subscribed again: some handlers close a stream after each event (for a
// task waiting for input), which would otherwise cost a subscription and a
// read at once, again and again. It grows with each stream in a row that
// closed sooner than streamIdleTimeout and starts again after a stream
// that stayed open that long.
func resubscribeBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 7, Cap: time.Minute}
}

var streamsOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "tether_agent_streams",
	Help: "Tasks followed by a stream (SubscribeToTask) now, by Agent.",
}, []string{agentLabel})

var streamsCut = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "tether_agent_streams_cut_total",
	Help: "Streams the operator cut because they lied (events of another task, a second end, endless events), by Agent.",
}, []string{agentLabel})

func init() { metrics.Registry.MustRegister(streamsOpen, streamsCut) }

// stream is one task's stream.
type stream struct {
	cancel context.CancelFunc
	agent  types.NamespacedName
	// over: the task is not streamed again (it fell back to polls, or its
	// stream reported its end).
	over bool
}

// maxStreams is the Agent's bound on streams.
func maxStreams(agent *v1alpha1.Agent) int {
	if agent.Spec.MaxStreams != nil {
		return int(*agent.Spec.MaxStreams)
	}
	return DefaultMaxStreams
}

// streamable: the Agent's card says it streams and the binding has streams.
func streamable(agent *v1alpha1.Agent) bool {
	st := agent.Status
	return st.Streaming && st.ProtocolVersion != a2a.ProtocolV03 && st.Binding != a2a.BindingGRPC
}

// startStream opens a stream for a followed task when its Agent streams and
// has room; it is called with s.mu held.
func (s *Scheduler) startStream(key types.NamespacedName, f Follow) {
	if s.ctx == nil || f.Target.Agent == nil || f.Read.TaskID == "" || !streamable(f.Target.Agent) {
		return
	}
	if _, ok := s.streams[key]; ok {
		return
	}
	agent := s.Dispatcher.shared(f.Target.Agent)
	ak := types.NamespacedName{Namespace: agent.Namespace, Name: agent.Name}
	if s.streamsPer[ak] >= maxStreams(agent) || !s.Dispatcher.takeStreamPlace() {
		return // polled at pollInterval
	}
	ctx, cancel := context.WithCancel(s.ctx)
	st := &stream{cancel: cancel, agent: ak}
	s.streams[key] = st
	s.streamsPer[ak]++
	streamsOpen.WithLabelValues(ak.String()).Set(float64(s.streamsPer[ak]))
	go s.keepStreamOpen(ctx, key, st, Target{Agent: agent, Tenant: f.Target.Tenant}, f.Read.TaskID)
}

// stopStream ends a task's stream; it is called with s.mu held.
func (s *Scheduler) stopStream(key types.NamespacedName) {
	if st, ok := s.streams[key]; ok {
		st.cancel()
		s.streams = shrinkmap.Delete(s.streams, key, &s.peaks.streams)
	}
}

// keepStreamOpen keeps a task's stream open: it subscribes again after a break and
// gives up (the task is polled) after streamFailures breaks in a row that
// brought no event.
func (s *Scheduler) keepStreamOpen(ctx context.Context, key types.NamespacedName, st *stream, t Target, taskID string) {
	defer func() {
		s.Dispatcher.releaseStreamPlace()
		s.mu.Lock()
		s.streamsPer[st.agent]--
		if s.streamsPer[st.agent] <= 0 { // no series is kept for an Agent without streams
			delete(s.streamsPer, st.agent)
			streamsOpen.DeleteLabelValues(st.agent.String())
		} else {
			streamsOpen.WithLabelValues(st.agent.String()).Set(float64(s.streamsPer[st.agent]))
		}
		s.mu.Unlock()
	}()
	failures := 0
	backoff := resubscribeBackoff()
	for ctx.Err() == nil {
		opened := time.Now()
		events, ended, answered, lied, refused := s.subscribe(ctx, key, t, taskID)
		if time.Since(opened) >= streamIdleTimeout {
			backoff = resubscribeBackoff() // it stayed open: the agent streams well
		}
		switch {
		case ctx.Err() != nil:
			return
		case refused:
			// The agent answered that it will not stream this task (the
			// JS SDK says so of a task that already ended): asking again
			// would only cost it calls. The task is read at once instead.
			s.ReadNow(key)
			s.endStream(key, st)
			return
		case lied:
			streamsCut.WithLabelValues(st.agent.String()).Inc()
			s.ReadNow(key) // the task is read instead of believed
			failures++
		case ended:
			if !answered { // the stream did not bring the whole task
				s.ReadNow(key)
			}
			s.endStream(key, st)
			return
		case events > 0:
			failures = 0
		default:
			failures++
		}
		if failures >= streamFailures {
			logf.FromContext(ctx).V(1).Info("the task's stream keeps failing; polling it instead", "delegation", key.String())
			s.endStream(key, st)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff.Step()):
		}
	}
}

// endStream marks a task as not streamed again while it is followed.
func (s *Scheduler) endStream(key types.NamespacedName, st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.streams[key]; ok && cur == st {
		st.over = true
	}
}

// subscribe reads one stream of the task until it breaks, ends, lies (an
// event for another task, a second event that ends the task, or more events
// than a task sends) or stays silent for streamIdleTimeout. Each change of
// state makes the task due at once; an end that came with the whole task is
// the read's answer instead (answered).
// refused: the agent answered the subscription with an error that proves
// it will not stream the task (not a broken connection).
func (s *Scheduler) subscribe(ctx context.Context, key types.NamespacedName, t Target, taskID string) (
	events int, ended, answered, lied, refused bool,
) {
	cl, release, err := s.Dispatcher.Connector.Client(ctx, t.Agent, t.Tenant)
	if err != nil {
		return 0, false, false, false, false
	}
	defer release()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()                                    // cutting the stream closes its connection
	idle := time.AfterFunc(streamIdleTimeout, cancel) // streams run in real time, like their connections
	defer idle.Stop()
	var last a2a.State
	for ev, err := range cl.Subscribe(sctx, taskID) {
		if err != nil {
			return events, ended, answered, false, events == 0 && a2a.IsRefused(err)
		}
		idle.Reset(streamIdleTimeout)
		events++
		switch {
		case ev.TaskID != taskID, ended, events > maxStreamEvents:
			return events, false, false, true, false
		}
		if ev.State == a2a.StateUnknown || ev.State == last {
			continue // an artifact or a repeated state: nothing to read yet
		}
		last = ev.State
		ended = ev.State.Terminal()
		if ended && ev.Ended != nil {
			answered = s.AnswerFromEvent(key, ev.Ended)
			continue
		}
		s.ReadNow(key)
	}
	return events, ended, answered, false, false
}

// AnswerFromEvent makes the ended task an event brought (a stream's, or a
// push whose token verified) the answer of the task's read, as a GetTask
// would have answered: the reconciler applies it with one status write. It
// is not a renewal: the read's schedule and the lease's renewal time stay.
// A read running now may answer what it saw before the end: the task is
// read once more after it. It reports whether the task is followed.
func (s *Scheduler) AnswerFromEvent(key types.NamespacedName, t *a2a.Task) bool {
	s.mu.Lock()
	it, ok := s.items[key]
	var seen string
	if ok {
		seen = it.f.Seen
		it.again = it.again || it.index < 0
	}
	now := s.Clock.Now()
	s.mu.Unlock()
	if !ok {
		return false
	}
	if Fingerprint(t, nil) != seen {
		s.Dispatcher.deliver(Key{Delegation: key, Kind: KindGet},
			Answer{Class: a2a.ClassAccepted, Task: t, Queued: now, Finished: now})
	}
	return true
}
