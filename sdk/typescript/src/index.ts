// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

// @tether-dev/agentkit: tether's lease and budget A2A extensions for agents
// built on @a2a-js/sdk, and delegate() to create child Delegations.

export * from './constants.js';
export { Budget, BudgetExhaustedError, budgetRequest, type BudgetReport, type BudgetRequest, type Meters } from './budget.js';
export { MemoryLeaseStore, leaseGrantMeta, leaseRequest, type Lease, type LeaseStore } from './lease.js';
export { currentTask, type DelegationClaim, type TaskScope } from './scope.js';
export {
  CanceledError,
  DeadlineError,
  KitExecutor,
  agentMessage,
  failEvent,
  statusEvent,
  terminal,
  type KitAgentExecutor,
} from './executor.js';
export { KitRequestHandler } from './handler.js';
export { Kit, type KitOptions, type Logger } from './kit.js';
export {
  ClaimNotProvenError,
  callerRefusal,
  claimRefusal,
  messageIdOf,
  origin,
  originsOf,
  verifyClaim,
  type ClaimedAgent,
  type ClaimedDelegation,
} from './claim.js';
export {
  AuthenticatedCaller,
  callerOf,
  kubeTokenReviewer,
  serviceAccountUsername,
  tokenReviewMiddleware,
  userBuilder,
  type Caller,
  type TokenReviewer,
} from './caller.js';
export { JSONRPC_PATH, LEGACY_JSONRPC_PATH, REST_PATH, serve, type Binding, type ServeOptions, type Served } from './server.js';
export {
  CARD_SIGNATURE_ALGORITHMS,
  CardSignatureError,
  cardPayload,
  loadCardSigningKey,
  publicKeySet,
  signCard,
  verifyCard,
  type CardSignatureEntry,
  type VerifiedCardSignature,
} from './cardsign.js';
export {
  ANNOTATION_CHILD,
  ChildNameTakenError,
  childName,
  goDuration,
  delegate,
  delegateAsync,
  waitFor,
  type DelegateRequest,
  type Outcome,
} from './delegate.js';

// What an agent built on the kit needs from the SDKs, so it depends on one
// copy of each (the kit's).
export { Role, TaskState, type AgentCard, type Message, type Task } from '@a2a-js/sdk';
export { AgentEvent, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
export { KubeConfig } from '@kubernetes/client-node';
export type { JSONWebKeySet, JWK } from 'jose';
