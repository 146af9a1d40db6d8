// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

// Callers authenticated with the Kubernetes TokenReview API, as the Go
// agentkit does it (WithTokenReview, WithOperator): the operator sends a
// token of its own ServiceAccount bound to the Agent's audience
// (spec.auth.serviceAccountToken); the kit asks the API server whether the
// token is valid for its audience, and the user name the API server
// answers is the caller.

import { createHash } from 'node:crypto';

import type { User } from '@a2a-js/sdk/server';
import { AuthenticationV1Api, type KubeConfig, type V1TokenReview } from '@kubernetes/client-node';
import type { NextFunction, Request, Response } from 'express';

/** Who made a request, as the API server authenticated them. */
export interface Caller {
  /** e.g. system:serviceaccount:tether-system:tether */
  username: string;
  uid: string;
  groups: string[];
}

/** Creates a TokenReview and returns the API server's answer. */
export type TokenReviewer = (review: V1TokenReview) => Promise<V1TokenReview>;

/** A TokenReviewer on a kubeconfig (the agent's identity needs create on tokenreviews). */
export function kubeTokenReviewer(kc: KubeConfig): TokenReviewer {
  const api = kc.makeApiClient(AuthenticationV1Api);
  return (body) => api.createTokenReview({ body });
}

/** The user name Kubernetes authenticates a ServiceAccount's tokens as. */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** The caller as the SDK's ServerCallContext carries it. */
export class AuthenticatedCaller implements User {
  constructor(readonly caller: Caller) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.caller.username;
  }
}

/** The authenticated caller of a request's user; undefined when none. */
export function callerOf(user: User | undefined): Caller | undefined {
  if (user instanceof AuthenticatedCaller) return user.caller;
  if (user?.isAuthenticated && user.userName) return { username: user.userName, uid: '', groups: [] };
  return undefined;
}

/** How long a token's review is reused, by the token's hash. */
const REVIEW_CACHE_MS = 60_000;
const MAX_CACHED_REVIEWS = 4096;

class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Express middleware refusing, with HTTP 401 and a Bearer challenge, every
 * request whose bearer token does not pass TokenReview for audience (503
 * when the review itself fails). An accepted request carries its Caller in
 * res.locals.caller, which userBuilder() hands to the SDK.
 */
export function tokenReviewMiddleware(review: TokenReviewer, audience: string, now: () => number = Date.now) {
  const cache = new Map<string, { caller: Caller; expires: number }>();
  const verify = async (token: string): Promise<Caller> => {
    // An empty audience would accept tokens meant for the API server.
    if (audience === '') throw new Refusal(500, 'the agent names no audience to check tokens for');
    const key = createHash('sha256').update(token).digest('hex');
    const hit = cache.get(key);
    if (hit && now() < hit.expires) return hit.caller;
    let tr: V1TokenReview;
    try {
      tr = await review({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences: [audience] } });
    } catch {
      throw new Refusal(503, 'TokenReview failed; try again');
    }
    const st = tr.status ?? {};
    if (!st.authenticated) throw new Refusal(401, `the token was refused: ${st.error || 'the token is not valid'}`);
    if (!(st.audiences ?? []).includes(audience)) throw new Refusal(401, `the token is not bound to audience ${JSON.stringify(audience)}`);
    const caller: Caller = { username: st.user?.username ?? '', uid: st.user?.uid ?? '', groups: st.user?.groups ?? [] };
    if (cache.size >= MAX_CACHED_REVIEWS) cache.clear();
    cache.set(key, { caller, expires: now() + REVIEW_CACHE_MS });
    return caller;
  };
  return (req: Request, res: Response, next: NextFunction): void => {
    const [scheme, token] = (req.headers.authorization ?? '').trim().split(/\s+/, 2);
    const refuse = (status: number, message: string, code = ''): void => {
      if (status === 401) res.setHeader('WWW-Authenticate', `Bearer realm="a2a"${code ? `, error="${code}"` : ''}`);
      res.status(status).type('text/plain').send(`${status === 401 ? 'unauthenticated' : 'the caller cannot be authenticated'}: ${message}\n`);
    };
    if (scheme?.toLowerCase() !== 'bearer' || !token) {
      refuse(401, `a bearer token is required (a Kubernetes ServiceAccount token for audience ${audience})`);
      return;
    }
    verify(token).then(
      (caller) => {
        res.locals.caller = caller;
        next();
      },
      (err: unknown) => (err instanceof Refusal ? refuse(err.status, err.message, 'invalid_token') : next(err)),
    );
  };
}

/** The SDK's userBuilder for requests that passed tokenReviewMiddleware. */
export const userBuilder = async (req: Request): Promise<User> => {
  const caller = (req.res?.locals.caller as Caller | undefined) ?? undefined;
  return caller ? new AuthenticatedCaller(caller) : { isAuthenticated: false, userName: '' };
};
