/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tether-dev/tether/internal/delegation"
)

// Retries (spec.retry) are decided in internal/delegation (retry.go); here
// an attempt's end is carried out. The next attempt is recorded in status
// (status.attempt, the ended attempt in status.attempts, its task let go)
// in the pass's one status write, before anything of it is sent: a process
// stopped during the backoff finds the attempt due and sends it once, and
// one stopped after its send finds the attempt's own send marker (markSend)
// and looks its task up (OwnAttemptTask), never sending it twice.

// endAttempt is what the record that ends an attempt comes to: the same
// record when the Delegation settles (the attempt kept in the history when
// a policy is in force), or the wait for the next attempt, with how long
// until it is due (again).
func (r *DelegationReconciler) endAttempt(s *scope, rec delegation.Record) (out delegation.Record, again bool, wait time.Duration) {
	o := s.observation()
	if o.Retry == nil && s.d.Status.Attempt == 0 {
		return rec, false, 0
	}
	next := delegation.AfterAttempt(o, rec)
	st := &s.d.Status
	delegation.RecordAttempt(st, next.Ended)
	if !next.Again {
		return next.Record, false, 0
	}
	class := string(rec.Outcome.FailureClass)
	delegation.NextAttempt(st)
	msg := next.Record.Outcome.Message
	s.afterWrite = append(s.afterWrite, func(context.Context) {
		retries.WithLabelValues(class).Inc()
		r.Recorder.Eventf(s.d, nil, "Normal", delegation.ReasonRetryScheduled, "Retry", "%s", truncate(msg, 1024))
	})
	return next.Record, true, max(next.At.Sub(s.now), time.Millisecond)
}

// retryLater is the result of a pass that scheduled the next attempt: it
// comes back when the attempt is due (its backoff ends).
func retryLater(wait time.Duration) ctrl.Result { return ctrl.Result{RequeueAfter: wait} }
