// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

// js-echo: an A2A agent built on the official JS SDK (@a2a-js/sdk), used to
// check that tether works with agents written on another A2A implementation.
// What a task does is chosen by its message text, like the Go test agent:
//   "wait"  runs until cancelled
//   "stubborn" works and ignores CancelTask (an agent that breaks the rule); it completes after 8s
//   "input" asks for input; a reply to the same task completes it with "got: <reply>"
//   "fail"  fails
//   "message" answers with a message "echo: <text>" instead of a task
//   else    completes with an artifact "echo: <text>"
//
// Flags (or environment variables):
//   --port       PORT        port to listen on (default 0: any free port)
//   --host       HOST        address to listen on (default 127.0.0.1)
//   --protocol   A2A_PROTOCOL  which bindings the card offers:
//                  1.0   JSON-RPC, protocol 1.0, at /a2a/jsonrpc
//                  0.3   JSON-RPC, protocol 0.3, at /a2a/v0.3/jsonrpc (a 0.3-shaped card)
//                  both  both of the above (default); the card lists 1.0 first
//                  rest  HTTP+JSON only, protocol 1.0, at /a2a/rest
//   --public-url PUBLIC_URL  base URL written into the card (default: the listening address)
//
// Prints "listening on <url>" when ready and one line per task received,
// reply received and task cancelled.

import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import express from 'express';
import { Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';

const { values: opts } = parseArgs({
  options: {
    port: { type: 'string', default: process.env.PORT ?? '0' },
    host: { type: 'string', default: process.env.HOST ?? '127.0.0.1' },
    protocol: { type: 'string', default: process.env.A2A_PROTOCOL ?? 'both' },
    'public-url': { type: 'string', default: process.env.PUBLIC_URL ?? '' },
  },
});
if (!['1.0', '0.3', 'both', 'rest'].includes(opts.protocol)) {
  console.error(`--protocol must be 1.0, 0.3, both or rest, not ${opts.protocol}`);
  process.exit(2);
}
const serveREST = opts.protocol === 'rest';
const serve10 = !serveREST && opts.protocol !== '0.3';
const serve03 = !serveREST && opts.protocol !== '1.0';
const PATH_10 = '/a2a/jsonrpc';
const PATH_03 = '/a2a/v0.3/jsonrpc';
const PATH_REST = '/a2a/rest';

const log = (line) => console.log(`${new Date().toISOString()} ${line}`);
const now = () => new Date().toISOString();

const textOf = (message) =>
  (message?.parts ?? [])
    .filter((p) => p.content?.$case === 'text')
    .map((p) => p.content.value)
    .join('');

const textPart = (value) => ({ content: { $case: 'text', value }, mediaType: 'text/plain', filename: '', metadata: {} });

const agentMessage = (ctx, text) => ({
  messageId: randomUUID(),
  role: Role.ROLE_AGENT,
  taskId: ctx.taskId,
  contextId: ctx.contextId,
  parts: [textPart(text)],
  metadata: {},
  extensions: [],
  referenceTaskIds: [],
});

const status = (taskId, contextId, state, message) =>
  AgentEvent.statusUpdate({ taskId, contextId, status: { state, message, timestamp: now() }, metadata: {} });

const artifact = (ctx, text) =>
  AgentEvent.artifactUpdate({
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    artifact: { artifactId: randomUUID(), name: 'result', description: '', parts: [textPart(text)], metadata: {}, extensions: [] },
    append: false,
    lastChunk: true,
    metadata: {},
  });

// Open tasks (running "wait" or waiting for input) by id: their context,
// and for "wait" what ends its execute call.
const open = new Map();
// Tasks whose CancelTask is ignored ("stubborn").
const stubborn = new Set();

const executor = {
  async execute(ctx, bus) {
    const text = textOf(ctx.userMessage);
    if (ctx.task) {
      // A reply to a task that asked for input. Every execute call must
      // publish the task (or a message) first, follow-ups included.
      log(`task ${ctx.taskId} reply received: ${JSON.stringify(text)}`);
      open.delete(ctx.taskId);
      bus.publish(AgentEvent.task({ ...ctx.task, status: { state: TaskState.TASK_STATE_WORKING, timestamp: now() } }));
      bus.publish(artifact(ctx, `got: ${text}`));
      bus.publish(status(ctx.taskId, ctx.contextId, TaskState.TASK_STATE_COMPLETED));
      return;
    }
    if (text.startsWith('message')) {
      log(`message ${ctx.userMessage.messageId} answered without a task`);
      bus.publish(AgentEvent.message({ ...agentMessage(ctx, `echo: ${text}`), taskId: '' }));
      return;
    }
    const kinds = ctx.userMessage.parts.map((p) => p.content?.$case ?? 'empty').join('+');
    log(`task ${ctx.taskId} received (context ${ctx.contextId}, message ${ctx.userMessage.messageId}, parts ${kinds}): ${JSON.stringify(text)}`);
    bus.publish(
      AgentEvent.task({
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: now() },
        history: [ctx.userMessage],
        artifacts: [],
        metadata: {},
      }),
    );
    if (text.startsWith('stubborn')) {
      stubborn.add(ctx.taskId);
      bus.publish(status(ctx.taskId, ctx.contextId, TaskState.TASK_STATE_WORKING));
      await new Promise((resolve) => setTimeout(resolve, 8_000));
      stubborn.delete(ctx.taskId);
      bus.publish(status(ctx.taskId, ctx.contextId, TaskState.TASK_STATE_COMPLETED));
    } else if (text.startsWith('wait')) {
      const cancelled = new Promise((resolve) => open.set(ctx.taskId, { contextId: ctx.contextId, resolve }));
      bus.publish(status(ctx.taskId, ctx.contextId, TaskState.TASK_STATE_WORKING));
      await cancelled; // cancelTask publishes the final status
    } else if (text.startsWith('input')) {
      open.set(ctx.taskId, { contextId: ctx.contextId });
      bus.publish(status(ctx.taskId, ctx.contextId, TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(ctx, 'which colour?')));
    } else if (text.startsWith('fail')) {
      bus.publish(status(ctx.taskId, ctx.contextId, TaskState.TASK_STATE_FAILED, agentMessage(ctx, 'it broke')));
    } else {
      bus.publish(artifact(ctx, `echo: ${text}`));
      bus.publish(status(ctx.taskId, ctx.contextId, TaskState.TASK_STATE_COMPLETED));
    }
  },

  async cancelTask(taskId, bus) {
    if (stubborn.has(taskId)) {
      log(`task ${taskId} cancel ignored`);
      return;
    }
    log(`task ${taskId} cancelled`);
    const task = open.get(taskId);
    open.delete(taskId);
    bus.publish(status(taskId, task?.contextId ?? '', TaskState.TASK_STATE_CANCELED));
    task?.resolve?.();
  },
};

const taskStore = new InMemoryTaskStore();
const app = express();
const server = http.createServer(app);

server.listen(Number(opts.port), opts.host, () => {
  const { port } = server.address();
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const base = (opts['public-url'] || `http://${host}:${port}`).replace(/\/$/, '');
  const iface = (path, protocolVersion, protocolBinding = 'JSONRPC') => ({ url: base + path, protocolBinding, protocolVersion, tenant: '' });
  const card = {
    name: 'js-echo',
    description: 'Echoes its input; built on the official A2A JS SDK.',
    version: '0.1.0',
    supportedInterfaces: [
      ...(serve10 ? [iface(PATH_10, '1.0')] : []),
      ...(serve03 ? [iface(PATH_03, '0.3')] : []),
      ...(serveREST ? [iface(PATH_REST, '1.0', 'HTTP+JSON')] : []),
    ],
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'echo',
        name: 'Echo',
        description: 'wait, input, fail, or anything to echo',
        tags: ['echo'],
        examples: ['hello'],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
  const requestHandler = new DefaultRequestHandler(card, taskStore, executor);
  const userBuilder = UserBuilder.noAuthentication;
  // With the 0.3 binding on, a client that names no A2A-Version gets a
  // 0.3-shaped card (which also carries the 1.0 interfaces).
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler, legacyCompat: { enabled: serve03 } }));
  if (serve10) app.use(PATH_10, jsonRpcHandler({ requestHandler, userBuilder }));
  if (serve03) app.use(PATH_03, jsonRpcHandler({ requestHandler, userBuilder, legacyCompat: { enabled: true } }));
  if (serveREST) app.use(PATH_REST, restHandler({ requestHandler, userBuilder }));
  log(`protocol ${opts.protocol}: ${card.supportedInterfaces.map((i) => `${i.protocolVersion} ${i.url}`).join(', ')}`);
  console.log(`listening on http://${host}:${port}`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
