/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// AgentFinalizer holds an Agent while Delegations that may have a task at
// it are unsettled, so their cancels can still reach the agent however the
// objects are deleted (a namespace, a GitOps prune, a chart uninstall).
const AgentFinalizer = "delegation.tether.dev/tasks"

// SecretKeyRef names one key of a Secret in the Agent's namespace.
type SecretKeyRef struct {
	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// key within the Secret's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// AgentHeader is one HTTP header sent with every request to the agent. Its
// value is read from a Secret when a request is made and never logged or copied
// into status or events.
type AgentHeader struct {
	// name of the HTTP header, e.g. Authorization.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`
	Name string `json:"name"`
	// valueFrom is the Secret key holding the header value.
	ValueFrom SecretKeyRef `json:"valueFrom"`
}

// AgentTLS configures how the agent's certificate is verified.
type AgentTLS struct {
	// caBundle is a Secret key holding PEM CA certificates to trust for this agent.
	// +optional
	CABundle *SecretKeyRef `json:"caBundle,omitempty"`
	// insecureSkipVerify disables certificate verification. Only for development.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// AgentAuth says how the operator proves who it is to the agent.
// +kubebuilder:validation:XValidation:rule="has(self.serviceAccountToken)",message="auth needs serviceAccountToken"
type AgentAuth struct {
	// serviceAccountToken sends a token of the operator's own
	// ServiceAccount, bound to audience (the TokenRequest API), as
	// "Authorization: Bearer <token>" on every request. The agent checks it
	// with TokenReview (agentkit.WithTokenReview), so it knows the caller is
	// the operator; a claim on a Delegation is then proven only from the
	// operator's identity. The token is renewed before it expires.
	// +optional
	ServiceAccountToken *ServiceAccountTokenAuth `json:"serviceAccountToken,omitempty"`
}

// ServiceAccountTokenAuth is the audience and lifetime of the operator's
// ServiceAccount token sent to one agent.
type ServiceAccountTokenAuth struct {
	// audience the token is bound to: the agent refuses a token bound to
	// any other, so a token sent to one agent cannot be replayed at another
	// of another audience. Usually the agent's own URL or name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Audience string `json:"audience"`
	// expirationSeconds is the token's requested lifetime (TokenRequest's
	// bounds: at least 600, here at most 86400). It is renewed at 80% of
	// its lifetime.
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=600
	// +kubebuilder:validation:Maximum=86400
	// +optional
	ExpirationSeconds *int64 `json:"expirationSeconds,omitempty"`
}

// ConfigMapKeyRef names one key of a ConfigMap in the Agent's namespace.
type ConfigMapKeyRef struct {
	// name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// key within the ConfigMap's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// CardKeys is where the JSON Web Key Set (RFC 7517, {"keys": [...]}) that
// an Agent's card must be signed with is read: a ConfigMap key or a Secret
// key (a Secret must carry the agent-credentials label) in the Agent's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.configMapKeyRef) != has(self.secretKeyRef)",message="cardSignature.keys needs exactly one of configMapKeyRef and secretKeyRef"
type CardKeys struct {
	// configMapKeyRef is a ConfigMap key holding the key set.
	// +optional
	ConfigMapKeyRef *ConfigMapKeyRef `json:"configMapKeyRef,omitempty"`
	// secretKeyRef is a Secret key holding the key set.
	// +optional
	SecretKeyRef *SecretKeyRef `json:"secretKeyRef,omitempty"`
}

// AgentCardSignature says how the agent card's signatures (A2A 1.0 §8.4:
// JWS over the RFC 8785 form of the card) are checked. A card whose
// signature does not verify with a key of the set, or an unsigned card
// when one is required, leaves the Agent not Ready (CardSignatureInvalid):
// nothing is sent to it. Every card read is checked again.
type AgentCardSignature struct {
	// required refuses an unsigned card. Without it an unsigned card is
	// used as it is, but a signed one must still verify.
	// +optional
	Required bool `json:"required,omitempty"`
	// keys are the public keys a signature may be made with, found by the
	// signature's key id (kid). Read again with every card read, so a key
	// removed from the set is refused from the next read on.
	Keys CardKeys `json:"keys"`
}

// AgentSpec describes an A2A endpoint.
// +kubebuilder:validation:XValidation:rule="!self.url.startsWith('https://') || !has(self.cardURL) || self.cardURL.startsWith('https://')",message="cardURL must be https when url is https"
// +kubebuilder:validation:XValidation:rule="!self.url.startsWith('https://') || !has(self.allowedOrigins) || self.allowedOrigins.all(o, o.startsWith('https://'))",message="allowedOrigins must be https when url is https"
// +kubebuilder:validation:XValidation:rule="!has(self.auth) || !has(self.headers) || self.headers.all(h, h.name.lowerAscii() != 'authorization')",message="an Authorization header cannot be set together with auth: auth.serviceAccountToken sends the Authorization header"
type AgentSpec struct {
	// url is the agent's base URL; its card is read from
	// /.well-known/agent-card.json under it unless cardURL is set.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must be an http:// or https:// URL"
	URL string `json:"url"`
	// cardURL is where the agent card is read when it is not at the well-known path.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="cardURL must be an http:// or https:// URL"
	// +optional
	CardURL string `json:"cardURL,omitempty"`
	// allowedOrigins are further origins (scheme://host[:port], no path) the
	// agent card's interface may point at, for example the gRPC port of an
	// agent whose card is served over HTTP. Requests carrying the Agent's
	// headers only ever go to the origins of url, cardURL and these; a card
	// advertising any other origin leaves the Agent not Ready
	// (OriginNotAllowed). When url is https, every origin must be https.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^https?://[^/?#@\s]+$`
	// +listType=set
	// +optional
	AllowedOrigins []string `json:"allowedOrigins,omitempty"`
	// tenant is sent with every request; a Delegation may override it.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Tenant string `json:"tenant,omitempty"`
	// headers are added to every request (for example credentials).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Headers []AgentHeader `json:"headers,omitempty"`
	// tls configures certificate verification.
	// +optional
	TLS *AgentTLS `json:"tls,omitempty"`
	// auth makes the operator prove its identity to the agent. It sends
	// the Authorization header itself, so headers may not name one too.
	// +optional
	Auth *AgentAuth `json:"auth,omitempty"`
	// requestTimeout bounds each request to the agent.
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('10m')",message="requestTimeout must be between 1s and 10m"
	// +optional
	RequestTimeout *metav1.Duration `json:"requestTimeout,omitempty"`
	// pollInterval is how often a running task is read back when the agent does
	// not push notifications.
	// +kubebuilder:default="5s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('100ms') && duration(self) <= duration('1h')",message="pollInterval must be between 100ms and 1h"
	// +optional
	PollInterval *metav1.Duration `json:"pollInterval,omitempty"`

	// maxConcurrentCalls bounds the A2A calls in flight to this agent at
	// once (sends, reads, renewals, cancels). Calls beyond it wait in the
	// Agent's own queue, cancels and renewals ahead of new sends; the
	// operator's --max-calls-per-agent caps it. Default 8.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +optional
	MaxConcurrentCalls *int32 `json:"maxConcurrentCalls,omitempty"`
	// maxStreams bounds the tasks at this agent followed by streaming
	// (SubscribeToTask) at once, when its card says it streams: a task's end
	// then shows as soon as the agent sends it. Tasks beyond it are polled
	// at pollInterval. 0 turns streaming off. Default 64.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MaxStreams *int32 `json:"maxStreams,omitempty"`
	// maxConcurrentTasks bounds the tasks running at this agent at once.
	// Delegations over it stay Pending with reason AgentAtCapacity and start
	// in creation order as tasks settle. Unset means no bound.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +optional
	MaxConcurrentTasks *int32 `json:"maxConcurrentTasks,omitempty"`
	// cardRefreshInterval is how often the agent card is read again.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="cardRefreshInterval must be at least 1s"
	// +optional
	CardRefreshInterval *metav1.Duration `json:"cardRefreshInterval,omitempty"`
	// cardSignature checks the agent card's signature against a key set.
	// +optional
	CardSignature *AgentCardSignature `json:"cardSignature,omitempty"`
	// conformance asks the operator to run the conformance check (what
	// kubectl tether check-agent runs) against the agent and report it as the
	// Conformant condition. Off unless set: the check sends the agent tasks
	// of its own (message ids starting with tether-check-) and cancels them.
	// +optional
	Conformance *AgentConformance `json:"conformance,omitempty"`
}

// AgentSkill is one skill the agent card advertises.
type AgentSkill struct {
	// +kubebuilder:validation:MaxLength=256
	ID string `json:"id"`
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Name string `json:"name,omitempty"`
}

// AgentExtensions says which tether extensions the agent card declares.
type AgentExtensions struct {
	Lease  bool `json:"lease,omitempty"`
	Budget bool `json:"budget,omitempty"`
}

// AgentCardSignatureStatus is the signature of the card that verified.
type AgentCardSignatureStatus struct {
	// keyID is the key id (kid) of the key that signed the card.
	// +kubebuilder:validation:MaxLength=256
	KeyID string `json:"keyID"`
	// algorithm is the JWS algorithm of the signature, e.g. ES256.
	// +kubebuilder:validation:MaxLength=16
	// +optional
	Algorithm string `json:"algorithm,omitempty"`
}

// AgentStatus is what the operator read from the agent card.
type AgentStatus struct {
	// cardName is the agent card's name (cut to 256 bytes).
	// +kubebuilder:validation:MaxLength=256
	// +optional
	CardName string `json:"cardName,omitempty"`
	// skills advertised by the card (bounded to the first 64).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Skills []AgentSkill `json:"skills,omitempty"`
	// protocolVersion of the interface chosen: 1.0 or 0.3.
	// +kubebuilder:validation:MaxLength=16
	// +optional
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// binding chosen: JSONRPC, HTTP+JSON or GRPC.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Binding string `json:"binding,omitempty"`
	// endpoint is the URL of the chosen interface.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// tenant of the chosen interface, sent unless the Agent or Delegation sets one.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Tenant string `json:"tenant,omitempty"`
	// streaming is true when the card advertises streaming.
	// +optional
	Streaming bool `json:"streaming,omitempty"`
	// pushNotifications is true when the card advertises push notifications.
	// +optional
	PushNotifications bool `json:"pushNotifications,omitempty"`
	// extensions the card declares.
	// +optional
	Extensions AgentExtensions `json:"extensions,omitempty"`
	// canListTasks says whether the agent lists tasks for the operator
	// (A2A ListTasks), probed when the card is read: false for 0.3 agents,
	// agents without ListTasks and agents that refuse this caller (a default
	// a2a-go handler answers Unauthenticated). Only an agent that can list
	// lets the operator find a task whose send answer was lost. Unset until
	// a probe got an answer.
	// +optional
	CanListTasks *bool `json:"canListTasks,omitempty"`
	// cardSignature is the signature of the card in use that verified, when
	// spec.cardSignature asks for one to be checked.
	// +optional
	CardSignature *AgentCardSignatureStatus `json:"cardSignature,omitempty"`
	// lastRefreshTime is when the card was last read successfully.
	// +optional
	LastRefreshTime *metav1.Time `json:"lastRefreshTime,omitempty"`
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conformance is the result of the last conformance check, when
	// spec.conformance.check asks for one.
	// +optional
	Conformance *AgentConformanceStatus `json:"conformance,omitempty"`
	// conditions: Ready is True when the card was read and an interface
	// chosen; Conformant (only with spec.conformance.check) is True when
	// every MUST of the last conformance check ran and passed.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Agent is an A2A endpoint that Delegations send tasks to.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tagent,categories=tether
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Card",type=string,JSONPath=`.status.cardName`
// +kubebuilder:printcolumn:name="Protocol",type=string,JSONPath=`.status.protocolVersion`,priority=1
// +kubebuilder:printcolumn:name="Card Key",type=string,JSONPath=`.status.cardSignature.keyID`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Agent struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec AgentSpec `json:"spec"`
	// +optional
	Status AgentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// AgentList contains a list of Agent.
type AgentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Agent `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &Agent{}, &AgentList{})
		return nil
	})
}
