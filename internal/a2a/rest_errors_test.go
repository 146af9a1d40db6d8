/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

// googleRPCStatus is an HTTP+JSON error body as the JS SDK writes it.
func googleRPCStatus(code int, status, reason string) string {
	return fmt.Sprintf(`{"error":{"code":%d,"status":%q,"message":"refused: %s","details":[`+
		`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":%q,"domain":"a2a-protocol.org"}]}}`,
		code, status, reason, reason)
}

// Every REST call kind decodes an error in a "+json" media type as the A2A
// error it carries, not as a bare server error.
func TestRESTErrorsInJSONSuffixedMediaTypesAreA2AErrors(t *testing.T) {
	calls := map[string]func(Client) error{
		"send": func(c Client) error {
			_, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "hi"})
			return err
		},
		"get":    func(c Client) error { _, err := c.Get(context.Background(), "t-1", false); return err },
		"cancel": func(c Client) error { _, err := c.Cancel(context.Background(), "t-1"); return err },
		"list":   func(c Client) error { _, err := c.ListByContext(context.Background(), "ctx-1"); return err },
		"subscribe": func(c Client) error {
			for _, err := range c.Subscribe(context.Background(), "t-1") {
				if err != nil {
					return err
				}
			}
			return errors.New("the stream ended without the error")
		},
	}
	cases := []struct {
		httpCode       int
		status, reason string
		contentType    string
		wantCode       int
		wantReason     string
	}{
		{404, "NOT_FOUND", "TASK_NOT_FOUND", "application/a2a+json", -32001, ReasonTaskNotFound},
		{400, "INVALID_ARGUMENT", "INVALID_PARAMS", "application/a2a+json; charset=utf-8", -32602, ReasonInvalidParams},
		{400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED", "application/a2a+json", -32009, ReasonVersionNotSupported},
		{404, "NOT_FOUND", "TASK_NOT_FOUND", "application/problem+json", -32001, ReasonTaskNotFound},
	}
	for _, tc := range cases {
		srv := newRawServer(t, tc.httpCode, tc.contentType, googleRPCStatus(tc.httpCode, tc.status, tc.reason))
		c, err := NewClient(context.Background(), Endpoint{URL: srv}, &Card{ProtocolVersion: ProtocolV1, Binding: BindingHTTPJSON, URL: srv, Streaming: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		for name, call := range calls {
			t.Run(tc.reason+"/"+tc.contentType+"/"+name, func(t *testing.T) {
				g := NewWithT(t)
				err := call(c)
				if name == "list" && tc.wantReason == ReasonVersionNotSupported {
					// A listing refused that way reads as "cannot list".
					g.Expect(errors.Is(err, ErrCannotList)).To(BeTrue(), "%v", err)
					g.Expect(Classify(err)).To(Equal(ClassRefused))
					return
				}
				var e *Error
				g.Expect(errors.As(err, &e)).To(BeTrue(), "%v", err)
				g.Expect(e.Reason).To(Equal(tc.wantReason), err.Error())
				g.Expect(e.Code).To(Equal(tc.wantCode))
				g.Expect(Classify(err)).To(Equal(ClassRefused))
				g.Expect(IsTaskNotFound(err)).To(Equal(tc.wantReason == ReasonTaskNotFound))
			})
		}
	}
}
