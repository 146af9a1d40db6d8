/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"time"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// A send is recorded with its deadline before it is made (status.sendDeadline;
// the first send's rides on its marker's write): the send leaves its Agent's
// pool by LeaveBy or never, and its call ends by Deadline. So any process,
// the one that made the send or a successor that knows nothing of it, can
// tell when an answered look-up that finds no task proves the send never
// started.

// SendLeaveWindow is how long a recorded send may wait for room in its
// Agent's pool; one that has not left by then is answered as never made
// and made again under a new deadline.
const SendLeaveWindow = time.Minute

// ListingLag is how long after an agent stored a task its ListTasks may
// still not show it.
const ListingLag = 5 * time.Second

// SendTerms are the times one send is made under.
type SendTerms struct {
	// LeaveBy: the send leaves the pool by then or never.
	LeaveBy time.Time
	// Deadline: no request of the send is on its way after it (rounded up
	// to the second it is recorded in).
	Deadline time.Time
}

// NewSendTerms are the terms of a send recorded at now whose call may take
// callTimeout.
func NewSendTerms(now time.Time, callTimeout time.Duration) SendTerms {
	leaveBy := now.Add(SendLeaveWindow)
	deadline := leaveBy.Add(callTimeout)
	if rounded := deadline.Truncate(time.Second); !rounded.Equal(deadline) {
		deadline = rounded.Add(time.Second)
	}
	return SendTerms{LeaveBy: leaveBy, Deadline: deadline}
}

// LookUpProvesAfter is the time after which an answered look-up that finds
// no task proves that no send recorded in st started: the latest send's
// deadline plus ListingLag. A send recorded without a deadline (by an
// earlier build) counts from its marker, with the longest call maxCall.
// Zero when no send is recorded.
func LookUpProvesAfter(st *v1alpha1.DelegationStatus, maxCall time.Duration) time.Time {
	switch {
	case st.SendDeadline != nil:
		return st.SendDeadline.Add(ListingLag)
	case st.SendStarted != nil:
		return st.SendStarted.Add(SendLeaveWindow + maxCall + ListingLag)
	}
	return time.Time{}
}
