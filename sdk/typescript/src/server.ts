// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import http from 'node:http';
import type { AddressInfo } from 'node:net';

import type { AgentCard } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore, type TaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { KubeConfig } from '@kubernetes/client-node';
import express, { type RequestHandler } from 'express';
import type { JWK } from 'jose';

import { signCard } from './cardsign.js';

import type { KitAgentExecutor } from './executor.js';
import { Kit, type KitOptions } from './kit.js';
import type { KitRequestHandler } from './handler.js';
import { originsOf } from './claim.js';
import { kubeTokenReviewer, tokenReviewMiddleware, userBuilder as callerUserBuilder } from './caller.js';

/** Paths the bindings are served on, relative to the base URL. */
export const JSONRPC_PATH = '/a2a/jsonrpc';
export const LEGACY_JSONRPC_PATH = '/a2a/v0.3/jsonrpc';
export const REST_PATH = '/a2a/rest';

/**
 * A binding serve() can offer: 'jsonrpc' (A2A 1.0 JSON-RPC), 'rest' (A2A
 * 1.0 HTTP+JSON) and 'jsonrpc-0.3' (A2A 0.3 JSON-RPC).
 */
export type Binding = 'jsonrpc' | 'rest' | 'jsonrpc-0.3';

const bindingInterfaces: Record<Binding, { path: string; protocolBinding: string; protocolVersion: string }> = {
  jsonrpc: { path: JSONRPC_PATH, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
  rest: { path: REST_PATH, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
  'jsonrpc-0.3': { path: LEGACY_JSONRPC_PATH, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
};

export interface ServeOptions extends KitOptions {
  /** Address to listen on (default 127.0.0.1). */
  host?: string;
  /** Port to listen on (default 0: any free port). */
  port?: number;
  /** Base URL written into the card (default: the listening address). */
  publicUrl?: string;
  /** Where tasks are kept (default: in memory). */
  taskStore?: TaskStore;
  /**
   * The bindings served, in the card's order of preference (default
   * ['jsonrpc', 'jsonrpc-0.3']).
   */
  bindings?: Binding[];
  /**
   * Signs the served card (A2A 1.0 §8.4) with this private JSON Web Key,
   * which names its kid and alg: usually a key Secret mounted as a file and
   * read with loadCardSigningKey. Its public part (publicKeySet) goes into
   * the key set an Agent's spec.cardSignature names.
   */
  cardSigningKey?: JWK;
}

/** A running agent. */
export interface Served {
  /** The base URL the card names. */
  url: string;
  /** The address the server listens on (differs from url behind a proxy). */
  listening: string;
  kit: Kit;
  handler: KitRequestHandler;
  server: http.Server;
  /** Stops the sweeper and the HTTP server. */
  close(): Promise<void>;
}

/**
 * Serves exec with the lease and budget extensions: the card at
 * /.well-known/agent-card.json (with both extensions added, signed when
 * cardSigningKey is set), the bindings asked for (A2A 1.0 JSON-RPC and 0.3
 * JSON-RPC by default) and the sweeper that cancels tasks whose lease lapsed.
 * The card's supportedInterfaces are filled in from the URL.
 */
export async function serve(
  card: Omit<AgentCard, 'supportedInterfaces'>,
  exec: KitAgentExecutor,
  opts: ServeOptions = {},
): Promise<Served> {
  const bindings: Binding[] = [...new Set(opts.bindings ?? (['jsonrpc', 'jsonrpc-0.3'] as const))];
  const unknownBindings = bindings.filter((b) => !(b in bindingInterfaces));
  if (bindings.length === 0 || unknownBindings.length > 0) {
    throw new Error(`bindings must name one or more of ${Object.keys(bindingInterfaces).join(', ')}, not ${JSON.stringify(opts.bindings)}`);
  }
  const kit = new Kit(opts);
  const app = express();
  const server = http.createServer(app);
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  const listening = `http://${shownHost}:${port}`;
  const url = (opts.publicUrl || listening).replace(/\/$/, '');

  // A request's Host is whatever the caller wrote: the origins come from
  // the options or the URL the card names, never from a request.
  if (kit.origins.length === 0) kit.origins = originsOf([url]);

  const extensions = [...(card.capabilities?.extensions ?? [])];
  for (const e of kit.extensions()) if (!extensions.some((x) => x.uri === e.uri)) extensions.push(e);
  let full: AgentCard = {
    ...card,
    capabilities: {
      streaming: card.capabilities?.streaming ?? true,
      pushNotifications: card.capabilities?.pushNotifications ?? false,
      extendedAgentCard: card.capabilities?.extendedAgentCard ?? false,
      ...card.capabilities,
      extensions,
    },
    supportedInterfaces: bindings.map((b) => {
      const { path, protocolBinding, protocolVersion } = bindingInterfaces[b];
      return { url: url + path, protocolBinding, protocolVersion, tenant: '' };
    }),
  };
  // The card is fixed once served: it is signed once, before the first request.
  if (opts.cardSigningKey) {
    try {
      full = await signCard(full, opts.cardSigningKey);
    } catch (err) {
      server.close();
      throw err;
    }
  }
  const handler = kit.requestHandler(new DefaultRequestHandler(full, opts.taskStore ?? new InMemoryTaskStore(), kit.executor(exec)));
  let userBuilder: UserBuilder = UserBuilder.noAuthentication;
  const protocol: RequestHandler[] = [];
  if (opts.tokenReview) {
    const { audience, reviewer } = opts.tokenReview;
    const kc = () => {
      const c = new KubeConfig();
      c.loadFromDefault();
      return c;
    };
    protocol.push(tokenReviewMiddleware(reviewer ?? kubeTokenReviewer(kc()), audience, kit.now));
    userBuilder = callerUserBuilder;
  }
  // A caller that names no A2A-Version gets the 0.3-shaped card when 0.3 is
  // served. Its signatures cover the 1.0 card, which a 1.0 caller reads.
  const legacyCompat = { enabled: bindings.includes('jsonrpc-0.3') };
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler, legacyCompat }));
  if (bindings.includes('jsonrpc')) app.use(JSONRPC_PATH, ...protocol, jsonRpcHandler({ requestHandler: handler, userBuilder }));
  if (bindings.includes('rest')) app.use(REST_PATH, ...protocol, restHandler({ requestHandler: handler, userBuilder }));
  if (bindings.includes('jsonrpc-0.3')) {
    app.use(LEGACY_JSONRPC_PATH, ...protocol, jsonRpcHandler({ requestHandler: handler, userBuilder, legacyCompat: { enabled: true } }));
  }
  const stopSweep = kit.sweep(handler);

  return {
    url,
    listening,
    kit,
    handler,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        stopSweep();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
