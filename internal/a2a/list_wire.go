/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// A look-up (ListTasks by context) needs the ids, states and message ids of
// the listed tasks, nothing else. An agent may still answer every page with
// whole tasks (artifacts, status texts, message parts) up to the size bound,
// and 64 look-ups in flight at once would then hold 64 fully decoded pages.
// So the answer of a look-up is cut down to those fields before a2a-go
// decodes it: over JSON-RPC and HTTP+JSON the body is decoded into the slim
// types below and re-encoded, over gRPC the response message is filtered by
// field number before it is unmarshalled. The raw page (within the size
// bound) is read once; artifacts and texts never become Go values.

type idsOnlyKey struct{}

// idsOnly marks ctx as a look-up whose answers keep only ids and states.
func idsOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, idsOnlyKey{}, true)
}

func isIDsOnly(ctx context.Context) bool {
	v, _ := ctx.Value(idsOnlyKey{}).(bool)
	return v
}

// idsOnlyAnswer is a ListTasks answer as the slim filter keeps it: the
// JSON-RPC envelope (jsonrpc, id, error, result) or, over HTTP+JSON, the
// page itself. What is not filtered passes through as it came.
type idsOnlyAnswer struct {
	JSONRPC json.RawMessage `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
	Result  *idsOnlyPage    `json:"result,omitempty"`
	idsOnlyPage
}

type idsOnlyPage struct {
	Tasks         []*idsOnlyTask  `json:"tasks,omitempty"`
	NextPageToken json.RawMessage `json:"nextPageToken,omitempty"`
	PageSize      json.RawMessage `json:"pageSize,omitempty"`
	TotalSize     json.RawMessage `json:"totalSize,omitempty"`
}

type idsOnlyTask struct {
	ID        json.RawMessage `json:"id,omitempty"`
	ContextID json.RawMessage `json:"contextId,omitempty"`
	Status    *struct {
		State json.RawMessage `json:"state,omitempty"`
	} `json:"status,omitempty"`
	History []*idsOnlyMessage `json:"history,omitempty"`
}

type idsOnlyMessage struct {
	ID   json.RawMessage `json:"messageId,omitempty"`
	Role json.RawMessage `json:"role,omitempty"`
}

// idsOnlyBody is a successful look-up answer's body, filtered on first read
// so that a decode error surfaces where a2a-go reads the body.
type idsOnlyBody struct {
	src io.ReadCloser
	out *bytes.Reader
	err error
}

func (b *idsOnlyBody) Read(p []byte) (int, error) {
	if b.out == nil && b.err == nil {
		b.out, b.err = filterIDsOnly(b.src)
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.out.Read(p)
}

func (b *idsOnlyBody) Close() error { return b.src.Close() }

func filterIDsOnly(r io.Reader) (*bytes.Reader, error) {
	var a idsOnlyAnswer
	if err := json.NewDecoder(r).Decode(&a); err != nil {
		return nil, err
	}
	out, err := json.Marshal(&a)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(out), nil
}

// idsOnlyCodec is the gRPC codec of a look-up: requests are marshalled as
// usual, the answer is filtered by field number (idsOnlyListPage) first.
type idsOnlyCodec struct{}

func (idsOnlyCodec) Name() string { return grpcproto.Name }

func (idsOnlyCodec) Marshal(v any) (mem.BufferSlice, error) {
	return encoding.GetCodecV2(grpcproto.Name).Marshal(v)
}

func (idsOnlyCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return errors.New("not a protocol buffer message")
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	slim, err := idsOnlyListPage(buf.ReadOnlyData())
	if err != nil {
		return err
	}
	return proto.Unmarshal(slim, m)
}

// idsOnlyCallOption is what the unary interceptor adds to a look-up's
// ListTasks call; nil for every other call.
func idsOnlyCallOption(ctx context.Context, reply any) grpc.CallOption {
	if _, ok := reply.(*a2apb.ListTasksResponse); ok && isIDsOnly(ctx) {
		return grpc.ForceCodecV2(idsOnlyCodec{})
	}
	return nil
}

// Field numbers of lf.a2a.v1 (a2a.proto) that a look-up keeps.
const (
	pbListTasks     protowire.Number = 1 // ListTasksResponse.tasks
	pbTaskID        protowire.Number = 1 // Task.id
	pbTaskContextID protowire.Number = 2 // Task.context_id
	pbTaskStatus    protowire.Number = 3 // Task.status
	pbTaskHistory   protowire.Number = 5 // Task.history
	pbStatusState   protowire.Number = 1 // TaskStatus.state
	pbMessageID     protowire.Number = 1 // Message.message_id
	pbMessageRole   protowire.Number = 4 // Message.role
)

var errMalformedProto = errors.New("malformed ListTasks response")

// idsOnlyListPage keeps of a ListTasksResponse every field but the tasks'
// artifacts, metadata, status messages and message contents.
func idsOnlyListPage(b []byte) ([]byte, error) {
	return filterProto(b, func(num protowire.Number) func([]byte) ([]byte, error) {
		if num == pbListTasks {
			return idsOnlyTaskProto
		}
		return keepProto
	})
}

func idsOnlyTaskProto(b []byte) ([]byte, error) {
	return filterProto(b, func(num protowire.Number) func([]byte) ([]byte, error) {
		switch num {
		case pbTaskID, pbTaskContextID:
			return keepProto
		case pbTaskStatus:
			return only(pbStatusState)
		case pbTaskHistory:
			return only(pbMessageID, pbMessageRole)
		}
		return nil
	})
}

func only(nums ...protowire.Number) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		return filterProto(b, func(num protowire.Number) func([]byte) ([]byte, error) {
			if slices.Contains(nums, num) {
				return keepProto
			}
			return nil
		})
	}
}

func keepProto(b []byte) ([]byte, error) { return b, nil }

// filterProto copies the fields of one message for which field returns a
// function: a length-delimited field is replaced by what the function makes
// of its contents, any other field is kept as it is. Fields for which field
// returns nil are dropped.
func filterProto(b []byte, field func(protowire.Number) func([]byte) ([]byte, error)) ([]byte, error) {
	var out []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, errMalformedProto
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, errMalformedProto
		}
		raw := b[:n+m]
		b = b[n+m:]
		f := field(num)
		switch {
		case f == nil:
			continue
		case typ != protowire.BytesType:
			out = append(out, raw...)
			continue
		}
		v, _ := protowire.ConsumeBytes(raw[n:])
		kept, err := f(v)
		if err != nil {
			return nil, err
		}
		out = protowire.AppendTag(out, num, protowire.BytesType)
		out = protowire.AppendBytes(out, kept)
	}
	return out, nil
}
