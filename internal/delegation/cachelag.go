/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"time"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// CacheLag bounds how long a send's answer waits for the cache to show the
// write made before the send.
const CacheLag = 10 * time.Second

// AnswerAheadOfCache: a send's answer came before the cache shows the write
// made before the send (its marker, or sendResult InFlight for a send made
// again). The write's own event brings the fresh copy; applying the answer
// to this one would only fail its locked status write. A look-up follows no
// write, so its answer never waits, and no answer waits past CacheLag (the
// locked write keeps a stale copy from winning anyway). finished is when
// the answer came.
func AnswerAheadOfCache(spec *v1alpha1.DelegationSpec, st *v1alpha1.DelegationStatus, lookUp bool, finished, now time.Time) bool {
	if lookUp || spec.TaskID != "" || st.TaskID != "" {
		return false
	}
	return (st.SendStarted == nil || st.SendResult == v1alpha1.SendNotSent) && now.Sub(finished) < CacheLag
}
