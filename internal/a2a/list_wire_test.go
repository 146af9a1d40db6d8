/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1/pbconv"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// artifactBytes is the size of the artifact every listed task carries: big,
// yet the page stays within the 1 MiB bound.
const artifactBytes = 400 << 10

// wholeTasksPage is a ListTasks page as an agent that ignores
// includeArtifacts answers it: whole tasks with a big artifact, a status
// text and message parts, one of them in another context.
func wholeTasksPage() *a2a.ListTasksResponse {
	task := func(id, contextID string) *a2a.Task {
		user := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(strings.Repeat("q", 50<<10)))
		user.ID = "m-" + id
		return &a2a.Task{
			ID: a2a.TaskID(id), ContextID: contextID,
			Status: a2a.TaskStatus{State: a2a.TaskStateWorking,
				Message: a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(strings.Repeat("s", 50<<10)))},
			Artifacts: []*a2a.Artifact{{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart(strings.Repeat("x", artifactBytes))}}},
			History:   []*a2a.Message{user, a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("working"))},
			Metadata:  map[string]any{"k": strings.Repeat("v", 10<<10)},
		}
	}
	return &a2a.ListTasksResponse{Tasks: []*a2a.Task{task("t-1", "ctx"), task("t-2", "other")}, PageSize: 2, TotalSize: 2}
}

// wholeTasksAgent serves wholeTasksPage over one binding and returns the
// card to reach it.
func wholeTasksAgent(t *testing.T, binding string) *Card {
	t.Helper()
	page := wholeTasksPage()
	switch binding {
	case bindGRPC:
		pb, err := pbconv.ToProtoListTasksResponse(page)
		if err != nil {
			t.Fatal(err)
		}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if strings.HasSuffix(info.FullMethod, "/ListTasks") {
				return proto.Clone(pb), nil
			}
			return h(ctx, req)
		}))
		a2agrpc.NewHandler(a2asrv.NewHandler(&testExecutor{})).RegisterWith(s)
		go func() { _ = s.Serve(lis) }()
		t.Cleanup(s.Stop)
		return cardOf(bindGRPC, "http://"+lis.Addr().String())
	case bindREST:
		body, err := json.Marshal(page)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}))
		t.Cleanup(srv.Close)
		return cardOf(bindREST, srv.URL)
	}
	url := jsonRPCAgent(t, func(string) any { return page })
	return cardOf(bindJSONRPC, url)
}

func TestLookUpDecodesIDsOnly(t *testing.T) {
	for _, b := range []string{bindJSONRPC, bindREST, bindGRPC} {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			card := wholeTasksAgent(t, b)
			c, err := NewClient(context.Background(), Endpoint{URL: card.URL}, card)
			g.Expect(err).NotTo(HaveOccurred())
			defer c.Close()

			tasks, err := c.ListByContext(context.Background(), "ctx")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tasks).To(Equal([]*Task{{ID: "t-1", ContextID: "ctx", State: StateWorking, MessageIDs: []string{"m-t-1"}}}))

			// What a2a-go decoded: ids, states and message ids, nothing else.
			list := func(ctx context.Context) *a2a.ListTasksResponse {
				resp, err := c.(*client).c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: "ctx"})
				g.Expect(err).NotTo(HaveOccurred())
				return resp
			}
			full := list(context.Background())
			g.Expect(full.Tasks[0].Artifacts).To(HaveLen(1), "the agent did send the artifact")
			slim := list(idsOnly(context.Background()))
			g.Expect(slim.Tasks).To(HaveLen(2))
			g.Expect(slim.NextPageToken).To(BeEmpty())
			for i, task := range slim.Tasks {
				g.Expect(task.ID).To(Equal(full.Tasks[i].ID))
				g.Expect(task.ContextID).To(Equal(full.Tasks[i].ContextID))
				g.Expect(task.Status.State).To(Equal(a2a.TaskStateWorking))
				g.Expect(task.Artifacts).To(BeEmpty())
				g.Expect(task.Metadata).To(BeEmpty())
				g.Expect(task.Status.Message).To(BeNil())
				g.Expect(task.History).To(HaveLen(2))
				g.Expect(task.History[0].ID).To(Equal("m-" + string(task.ID)))
				g.Expect(task.History[0].Role).To(Equal(a2a.MessageRoleUser))
				for _, m := range task.History {
					g.Expect(m.Parts).To(BeEmpty())
				}
			}

			// The artifacts never became Go values: a look-up allocates
			// less than a whole decode by more than the artifacts' size.
			const runs = 4
			allocated := func(ctx context.Context) uint64 {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for range runs {
					list(ctx)
				}
				runtime.ReadMemStats(&after)
				return after.TotalAlloc - before.TotalAlloc
			}
			// TotalAlloc counts the whole process: tests running beside this
			// one add to either side. Of three attempts one showing the
			// saving is taken: a decode that kept the artifacts would need
			// the artifacts' size in noise on the whole side to pass.
			var whole, ids uint64
			for range 3 {
				whole, ids = allocated(context.Background()), allocated(idsOnly(context.Background()))
				t.Logf("allocated per page: whole %d KiB, ids only %d KiB", whole/runs>>10, ids/runs>>10)
				if whole-min(whole, ids) > uint64(runs*2*artifactBytes) {
					break
				}
			}
			g.Expect(whole-min(whole, ids)).To(BeNumerically(">", uint64(runs*2*artifactBytes)),
				"whole %d bytes, ids only %d", whole, ids)
		})
	}
}

func TestIDsOnlyFilterKeepsErrorsAndMalformedAnswers(t *testing.T) {
	g := NewWithT(t)
	out, err := filterIDsOnly(strings.NewReader(`{"jsonrpc":"2.0","id":7,"error":{"code":-32004,"message":"no"}}`))
	g.Expect(err).NotTo(HaveOccurred())
	var back map[string]any
	g.Expect(json.NewDecoder(out).Decode(&back)).To(Succeed())
	g.Expect(back).To(Equal(map[string]any{"jsonrpc": "2.0", "id": 7.0, "error": map[string]any{"code": -32004.0, "message": "no"}}))

	_, err = filterIDsOnly(strings.NewReader(`{"tasks":{"not":"a list"}}`))
	g.Expect(err).To(HaveOccurred())
	_, err = idsOnlyListPage([]byte{0x0a, 0x7f, 0x01})
	g.Expect(err).To(MatchError(errMalformedProto))
}
