// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

// ts-worker: an A2A agent on tether's TypeScript agentkit. It honours the
// lease and budget extensions and delegates through child Delegations.
// What a task does is chosen by how its message text starts:
//   "wait"                    runs until cancelled (or its lease lapses, or its deadline passes)
//   "input"                   asks for input; a reply to the same task completes it with "got: <reply>"
//   "spend N"                 charges N tokens to its budget, then completes with "spent N tokens"
//   "delegate AGENT TEXT..."  creates a child Delegation to the Agent AGENT with TEXT, waits for it,
//                             and completes with what the child answered
//   "whoami"                  completes with "caller: <user name>" (the caller tokenReview
//                             authenticated, "(none)" without it)
//   else                      completes with an artifact "echo: <text>"
// (the words kubectl tether check-agent sends by default).
//
// Flags (or environment variables):
//   --port       PORT        port to listen on (default 0: any free port)
//   --host       HOST        address to listen on (default 127.0.0.1)
//   --public-url PUBLIC_URL  base URL written into the card, and the origin the claim check
//                            takes as this agent's (default: the listening address)
//   --origin     ORIGINS     further origins Agents reach this agent under (comma-separated)
//   --budget     CHILD_BUDGET tokens granted to a delegated child (default 0: none)
//   --bindings   BINDINGS    the bindings served, in order of preference (comma-separated:
//                            jsonrpc, rest, jsonrpc-0.3; default jsonrpc,jsonrpc-0.3)
//   --card-key   CARD_SIGNING_KEY  a file holding a private JSON Web Key (with kid and alg),
//                            e.g. a key Secret mounted into the pod: the card is served signed
//   --token-audience TOKEN_AUDIENCE  authenticate every protocol request with TokenReview: its
//                            bearer token must be a Kubernetes token bound to this audience (the
//                            Agent's spec.auth.serviceAccountToken.audience); others get HTTP 401
//   --operator   OPERATOR    the operator's user name (system:serviceaccount:<namespace>:<name>):
//                            claims are proven only from it; needs --token-audience
// The Kubernetes client for delegate() and TokenReview reads KUBECONFIG or
// the in-cluster service account (get on delegations and agents, create on
// delegations and on events.k8s.io events; with --token-audience, create on
// tokenreviews: the system:auth-delegator ClusterRole).
//
// Prints "listening on <url>" when ready (after the key set of a signed
// card) and one line per task received, child created and task cancelled.

import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';

import {
  AgentEvent,
  BudgetExhaustedError,
  KubeConfig,
  TaskState,
  agentMessage,
  delegate,
  failEvent,
  loadCardSigningKey,
  publicKeySet,
  serve,
  statusEvent,
  type Binding,
  type ExecutionEventBus,
  type KitAgentExecutor,
  type RequestContext,
  type TaskScope,
} from '@tether-dev/agentkit';

const { values: opts } = parseArgs({
  options: {
    port: { type: 'string', default: process.env['PORT'] ?? '0' },
    host: { type: 'string', default: process.env['HOST'] ?? '127.0.0.1' },
    'public-url': { type: 'string', default: process.env['PUBLIC_URL'] ?? '' },
    origin: { type: 'string', default: process.env['ORIGINS'] ?? '' },
    budget: { type: 'string', default: process.env['CHILD_BUDGET'] ?? '0' },
    bindings: { type: 'string', default: process.env['BINDINGS'] ?? 'jsonrpc,jsonrpc-0.3' },
    'card-key': { type: 'string', default: process.env['CARD_SIGNING_KEY'] ?? '' },
    'token-audience': { type: 'string', default: process.env['TOKEN_AUDIENCE'] ?? '' },
    operator: { type: 'string', default: process.env['OPERATOR'] ?? '' },
  },
});
if (opts.operator && !opts['token-audience']) {
  // Without TokenReview no caller is authenticated: no claim would be proven.
  console.error('--operator needs --token-audience');
  process.exit(2);
}

const log = (line: string): void => console.log(`${new Date().toISOString()} ${line}`);

const textOf = (rc: RequestContext): string =>
  (rc.userMessage?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

let kube: KubeConfig | undefined;
function kubeConfig(): KubeConfig {
  if (!kube) {
    kube = new KubeConfig();
    kube.loadFromDefault();
  }
  return kube;
}

function artifact(rc: RequestContext, text: string) {
  return AgentEvent.artifactUpdate({
    taskId: rc.taskId,
    contextId: rc.contextId,
    artifact: {
      artifactId: randomUUID(),
      name: 'result',
      description: '',
      parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: {} }],
      metadata: {},
      extensions: [],
    },
    append: false,
    lastChunk: true,
    metadata: {},
  });
}

const worker: KitAgentExecutor = {
  async execute(rc: RequestContext, bus: ExecutionEventBus, scope: TaskScope) {
    const text = textOf(rc).trim();
    if (rc.task) {
      // A reply to a task that asked for input. Every execute call publishes
      // the task first, follow-ups included.
      log(`task ${rc.taskId} reply received: ${JSON.stringify(text)}`);
      bus.publish(AgentEvent.task({ ...rc.task, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() } }));
      bus.publish(artifact(rc, `got: ${text}`));
      bus.publish(statusEvent(rc.taskId, rc.contextId, TaskState.TASK_STATE_COMPLETED));
      return;
    }
    const claim = scope.delegation ? ` for Delegation ${scope.delegation.namespace}/${scope.delegation.name}` : '';
    const caller = scope.caller ? `, caller ${scope.caller.username}` : '';
    log(`task ${rc.taskId} received${claim} (message ${rc.userMessage.messageId}${caller}): ${JSON.stringify(text)}`);
    bus.publish(
      AgentEvent.task({
        id: rc.taskId,
        contextId: rc.contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
        history: [rc.userMessage],
        artifacts: [],
        metadata: {},
      }),
    );
    bus.publish(statusEvent(rc.taskId, rc.contextId, TaskState.TASK_STATE_WORKING));
    const [, ...rest] = text.split(/\s+/);
    let result: string;
    if (text.startsWith('wait')) {
      // The kit aborts the signal on cancel, lapse and deadline, and writes the final state.
      await new Promise((resolve) => scope.signal.addEventListener('abort', resolve, { once: true }));
      return;
    } else if (text.startsWith('input')) {
      bus.publish(statusEvent(rc.taskId, rc.contextId, TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(rc.taskId, rc.contextId, 'which colour?')));
      return;
    } else if (text.startsWith('spend ')) {
      const n = Number(rest[0]);
      scope.budget.charge('tokens', n); // throws BudgetExhaustedError when it would overspend
      result = `spent ${n} tokens`;
    } else if (text.startsWith('delegate ')) {
      const [agent = '', ...words] = rest;
      const tokens = Number(opts.budget);
      try {
        const out = await delegate(kubeConfig(), {
          key: 'child',
          agent,
          text: words.join(' '),
          ...(tokens > 0 ? { budget: { tokens } } : {}),
        });
        log(`task ${rc.taskId} child ${out.name} ended ${out.phase}`);
        result = `child ${out.name} ${out.phase}: ${out.text ?? out.message ?? ''}`;
      } catch (err) {
        if (scope.signal.aborted || err instanceof BudgetExhaustedError) throw err;
        log(`task ${rc.taskId} could not delegate: ${err instanceof Error ? err.message : String(err)}`);
        bus.publish(failEvent(rc.taskId, rc.contextId, 'PolicyRefusal', err instanceof Error ? err.message : String(err)));
        return;
      }
    } else if (text === 'whoami') {
      result = `caller: ${scope.caller?.username ?? '(none)'}`;
    } else {
      result = `echo: ${text}`;
    }
    bus.publish(artifact(rc, result));
    bus.publish(statusEvent(rc.taskId, rc.contextId, TaskState.TASK_STATE_COMPLETED, agentMessage(rc.taskId, rc.contextId, result)));
  },

  async cancelTask(taskId: string, bus: ExecutionEventBus) {
    log(`task ${taskId} cancelled`);
    bus.publish(statusEvent(taskId, '', TaskState.TASK_STATE_CANCELED));
  },
};

const cardKey = opts['card-key'] ? loadCardSigningKey(opts['card-key']) : undefined;
const served = await serve(
  {
    name: 'ts-worker',
    description: 'A worker on the tether TypeScript agentkit: wait, spend N, delegate AGENT TEXT, or anything to echo.',
    version: '0.1.0',
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'work',
        name: 'Work',
        description: 'wait, spend N, delegate AGENT TEXT, or anything to echo',
        tags: ['worker'],
        examples: ['spend 100'],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
    iconUrl: undefined,
    documentationUrl: undefined,
  },
  worker,
  {
    host: opts.host,
    port: Number(opts.port),
    publicUrl: opts['public-url'],
    origins: [opts['public-url'], ...opts.origin.split(',')].filter((o): o is string => !!o),
    // A refused claim or a taken child name shows on the Delegation as a Warning Event.
    recordEvents: true,
    bindings: opts.bindings.split(',').filter((b) => b) as Binding[],
    ...(cardKey ? { cardSigningKey: cardKey } : {}),
    ...(opts['token-audience'] ? { tokenReview: { audience: opts['token-audience'] } } : {}),
    ...(opts.operator ? { operator: opts.operator } : {}),
  },
);
log(`origins for the claim check: ${served.kit.origins.join(', ') || '(none)'}`);
log(`card names ${served.url}`);
if (opts['token-audience']) log(`callers authenticated by TokenReview for audience ${opts['token-audience']}; claims proven only from ${opts.operator || '(any caller)'}`);
// The key set an Agent's spec.cardSignature names for this card.
if (cardKey) log(`card signed; its key set: ${JSON.stringify(publicKeySet(cardKey))}`);
console.log(`listening on ${served.listening}`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => void served.close().then(() => process.exit(0)));
}
