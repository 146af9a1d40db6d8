/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package interop

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/internal/a2a"
)

// The JS SDK answers errors over HTTP+JSON as google.rpc.Status bodies in
// application/a2a+json: tether's client reads them as the A2A errors they
// are, not as bare server errors.
func TestJSSDKRESTErrorsAreA2AErrors(t *testing.T) {
	e := setup(t, modeREST)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := a2a.Dial(ctx, a2a.Endpoint{URL: e.agent.URL()})
	e.g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	e.g.Expect(c.Card().Binding).To(Equal(a2a.BindingHTTPJSON))

	_, err = c.Get(ctx, "no-such-task", false)
	e.g.Expect(a2a.IsTaskNotFound(err)).To(BeTrue(), "%v", err)
	e.g.Expect(a2a.Classify(err)).To(Equal(a2a.ClassRefused), "%v", err)

	done, err := c.Send(ctx, a2a.SendRequest{MessageID: "rest-done", Text: "hello"})
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Eventually(func() a2a.State { return e.readBack(done.ID).State }, eventually, tick).Should(Equal(a2a.StateCompleted))
	// The SDK refuses the cancel (TaskNotCancelable); the client reads the
	// finished task instead.
	got, err := c.Cancel(ctx, done.ID)
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Expect(got.State).To(Equal(a2a.StateCompleted))
	e.g.Expect(e.agent.Cancelled(done.ID)).To(BeTrue(), "the cancel reached the agent over HTTP+JSON")
}
