/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// The card read records whether the agent lists tasks for the operator: a
// stock a2a-go handler (no authenticator) answers ListTasks Unauthenticated.
func TestCardReadRecordsWhetherTheAgentListsTasks(t *testing.T) {
	e := setup(t)

	mux := http.NewServeMux()
	stock := httptest.NewServer(mux)
	t.Cleanup(stock.Close)
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{
		Name:                "stock",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(stock.URL+"/rpc", a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text"},
		DefaultOutputModes:  []string{"text"},
	}))
	mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(testExecutor{})))
	e.createAgent("stock", stock.URL)

	canList := func(name string) func() *bool {
		return func() *bool {
			a := &v1alpha1.Agent{}
			if err := k8sClient.Get(context.Background(), clientKey(&v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}), a); err != nil {
				return nil
			}
			return a.Status.CanListTasks
		}
	}
	e.g.Eventually(canList("agent"), eventually, tick).Should(HaveValue(BeTrue()), "the test agent lists for its one user")
	e.g.Eventually(canList("stock"), eventually, tick).Should(HaveValue(BeFalse()), "Unauthenticated: cannot list")
}
