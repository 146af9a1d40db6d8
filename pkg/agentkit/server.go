/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"net/http"
	"slices"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// Paths the Server serves the protocol bindings on, relative to its base URL.
const (
	JSONRPCPath   = "/"     // A2A 1.0 JSON-RPC
	RESTPath      = "/rest" // A2A 1.0 HTTP+JSON
	LegacyRPCPath = "/v0.3" // A2A 0.3 JSON-RPC
)

// Server is an http.Handler serving an agent with the kit: the card at
// /.well-known/agent-card.json and the bindings at the paths above. Close it
// to stop the lease sweeper.
type Server struct {
	http.Handler
	Kit *Kit
	// RequestHandler is the a2a-go handler behind the bindings.
	RequestHandler a2asrv.RequestHandler

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// NewServer serves exec with the lease and budget extensions. The card is
// completed with both extensions; when it lists no interfaces, they are
// derived from each request's Host (put your public URLs in the card when
// the agent sits behind a proxy). Without WithOrigins, the kit's own
// origins are those of the card's interfaces: a card without interfaces and
// a server without WithOrigins proves no claim, since a request's Host is
// whatever the caller wrote.
func NewServer(card *a2a.AgentCard, exec a2asrv.AgentExecutor, opts ...Option) *Server {
	k := New(opts...)
	if len(k.origins) == 0 {
		for _, i := range card.SupportedInterfaces {
			if i != nil && i.ProtocolBinding != a2a.TransportProtocolGRPC {
				k.addOrigins(i.URL)
			}
		}
	}
	handlerOpts := append([]a2asrv.RequestHandlerOption{
		a2asrv.WithTaskStore(newTaskStore()),
		a2asrv.WithLogger(k.logger),
		a2asrv.WithCallInterceptors(k.Interceptor()),
	}, k.handlerOpts...)
	h := a2asrv.NewHandler(k.Executor(exec), handlerOpts...)

	card = withExtensions(card, k.Extensions())
	mux := http.NewServeMux()
	cards := cardHandler(card)
	if k.cardKey != nil {
		cards = signCards(cards, k.cardKey)
	}
	protocol := func(h http.Handler) http.Handler { return h }
	if k.reviews != nil {
		protocol = k.Authenticate
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, cards)
	mux.Handle("POST "+JSONRPCPath+"{$}", protocol(a2asrv.NewJSONRPCHandler(h)))
	mux.Handle(RESTPath+"/", protocol(http.StripPrefix(RESTPath, a2asrv.NewRESTHandler(h))))
	mux.Handle("POST "+LegacyRPCPath, protocol(a2av0.NewJSONRPCHandler(h)))

	ctx, stop := context.WithCancel(context.Background())
	s := &Server{Handler: withIncomingTrace(mux), Kit: k, RequestHandler: h, stop: stop}
	s.wg.Go(func() { k.Sweep(ctx, h) })
	return s
}

// Close stops the lease sweeper.
func (s *Server) Close() {
	s.stop()
	s.wg.Wait()
}

// newTaskStore keeps tasks in memory, each owned by its caller: an
// authenticated caller's tasks are invisible to every other caller (a2a-go
// answers TaskNotFound). Unauthenticated callers share one owner, so
// ListTasks (which a client uses to find a task it sent before a crash)
// works without an authentication layer.
func newTaskStore() taskstore.Store {
	return taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{Authenticator: taskOwner})
}

// anonymous owns the tasks of unauthenticated callers. Authenticated owners
// are prefixed, so no user name can stand for them.
const anonymous = "anonymous"

type ownerKey struct{}

// taskOwner is the task store's key for the caller: the authenticated user,
// or the owner the kit acts for (the sweeper cancelling a lapsed task).
// A user name that was not authenticated is not an identity.
func taskOwner(ctx context.Context) (string, error) {
	if o, ok := ctx.Value(ownerKey{}).(string); ok && o != "" {
		return o, nil
	}
	if cc, ok := a2asrv.CallContextFrom(ctx); ok && cc.User != nil && cc.User.Authenticated && cc.User.Name != "" {
		return "user:" + cc.User.Name, nil
	}
	return anonymous, nil
}

// actingFor makes the kit's own calls (the sweeper's cancel) act as the
// task's owner.
func actingFor(ctx context.Context, owner string) context.Context {
	if owner == "" {
		return ctx
	}
	return context.WithValue(ctx, ownerKey{}, owner)
}

func withExtensions(card *a2a.AgentCard, exts []a2a.AgentExtension) *a2a.AgentCard {
	c := *card
	c.Capabilities.Extensions = slices.Clone(card.Capabilities.Extensions)
	for _, e := range exts {
		if !slices.ContainsFunc(c.Capabilities.Extensions, func(x a2a.AgentExtension) bool { return x.URI == e.URI }) {
			c.Capabilities.Extensions = append(c.Capabilities.Extensions, e)
		}
	}
	return &c
}

type baseURLKey struct{}

// cardHandler serves the card in the form both 0.3 and 1.0 clients read.
func cardHandler(card *a2a.AgentCard) http.Handler {
	producer := a2asrv.AgentCardProducerFn(func(ctx context.Context) (*a2a.AgentCard, error) {
		if len(card.SupportedInterfaces) > 0 {
			return card, nil
		}
		base, _ := ctx.Value(baseURLKey{}).(string)
		c := *card
		c.SupportedInterfaces = []*a2a.AgentInterface{
			a2a.NewAgentInterface(base+JSONRPCPath, a2a.TransportProtocolJSONRPC),
			a2a.NewAgentInterface(base+RESTPath, a2a.TransportProtocolHTTPJSON),
			{URL: base + LegacyRPCPath, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
		}
		return &c, nil
	})
	compat := slices.ContainsFunc(card.SupportedInterfaces, func(i *a2a.AgentInterface) bool {
		return i.ProtocolVersion == a2av0.Version
	})
	var h http.Handler
	if len(card.SupportedInterfaces) == 0 || compat {
		h = a2asrv.NewAgentCardHandler(a2av0.NewAgentCardProducer(producer))
	} else {
		h = a2asrv.NewAgentCardHandler(producer)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme := schemeHTTP
		if r.TLS != nil {
			scheme = schemeHTTPS
		}
		ctx := context.WithValue(r.Context(), baseURLKey{}, scheme+"://"+r.Host)
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
