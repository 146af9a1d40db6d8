/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// An agent that posts hundreds of progress messages: its full history is
// far over the size bound, yet polls, the cancel and the result all work,
// because no call asks for history it does not need. On every binding with
// 100 messages of 4 KiB and a 64 KiB bound (quick: a2a-go's in-memory store
// copies the history on every update), and as the issue saw it, 300
// messages of 4 KiB against the default 1 MiB bound, over 1.0 JSON-RPC.
func TestLongHistoriesDoNotBreakPollsCancelOrResult(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			checkLongHistory(t, b, 100, 64<<10)
		})
	}
	t.Run("300 messages, default bound", func(t *testing.T) {
		t.Parallel()
		checkLongHistory(t, bindJSONRPC, 300, 0)
	})
}

func checkLongHistory(t *testing.T, b string, messages int, bound int64) {
	g := NewWithT(t)
	a := newTestAgent(t, b)
	ep := a.endpoint()
	ep.MaxResponseBytes = bound
	c := dialAgent(t, g, a, ep)
	{
		{

			ids := make([]string, 0, 2)
			for _, m := range []string{"m-kept", "m-canceled"} {
				task, err := c.Send(context.Background(), SendRequest{MessageID: m, ContextID: "ctx-chatty", Text: fmt.Sprintf("chatty %d", messages)})
				g.Expect(err).NotTo(HaveOccurred())
				ids = append(ids, task.ID)
			}
			last := fmt.Sprintf("progress %d ", messages)
			for _, id := range ids {
				g.Eventually(func(g Gomega) {
					task, err := c.Get(context.Background(), id, true)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(task.State).To(Equal(StateWorking))
					g.Expect(strings.HasPrefix(task.StatusText, last)).To(BeTrue(), "all progress posted")
				}).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
			}

			if !isV03(b) {
				// Each listed task carries recent history: the pages shrink
				// until they fit, and both tasks are found.
				tasks, err := c.ListByContext(context.Background(), "ctx-chatty")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(tasks).To(ConsistOf(HaveField("ID", ids[0]), HaveField("ID", ids[1])))
			}

			// CancelTask cannot ask for less history: its answer is too
			// large, yet the agent got it and the task is read back.
			canceled, err := c.Cancel(context.Background(), ids[1])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(a.wasCanceled(ids[1])).To(BeTrue())
			g.Expect(canceled.ID).To(Equal(ids[1]))
			g.Eventually(func(g Gomega) {
				task, err := c.Get(context.Background(), ids[1], false)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(task.State).To(Equal(StateCanceled))
			}).WithTimeout(time.Minute).WithPolling(50 * time.Millisecond).Should(Succeed())

			a.releaseAll()
			var done *Task
			g.Eventually(func(g Gomega) {
				var err error
				done, err = c.Get(context.Background(), ids[0], false)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(done.State).To(Equal(StateCompleted))
			}).WithTimeout(time.Minute).WithPolling(50 * time.Millisecond).Should(Succeed())
			g.Expect(done.ResultText).To(Equal("done: chatty"))
			g.Expect(done.StatusText).To(Equal("finished"))
		}
	}
}
