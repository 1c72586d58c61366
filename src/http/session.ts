/**
 * Console sessions: `POST /session` exchanges the API token for a cookie, `DELETE /session` ends it.
 *
 * The cookie holds a random session id, never the token. Sessions live in this process's memory
 * (a restart signs everyone out, which is the safe direction), expire after a fixed time, and are
 * bounded in number. The cookie is HttpOnly (page script never sees it) and SameSite=Strict (no
 * other site's page makes the browser send it). On top of that, auth.ts refuses a write authorised
 * only by the cookie unless its Origin is this server's own: `sameOrigin` below.
 */
import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { App } from './app.js';
import { ApiError } from './errors.js';
import { ErrorRef, SuccessSchema } from './schemas.js';

export const sessionCookieName = 'netkeep_session';
/** How long a session lasts after sign-in. */
export const sessionLifetimeMs = 7 * 24 * 3600_000;
/** More live sessions than this and the oldest is dropped (a bound on memory, never reached in use). */
const maxSessions = 10_000;

export class SessionStore {
  /** Session id -> expiry (epoch ms). A Map iterates in insertion order: oldest first. */
  private readonly sessions = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** A new session id, valid for `sessionLifetimeMs`. */
  create(): string {
    this.prune();
    if (this.sessions.size >= maxSessions) {
      const oldest = this.sessions.keys().next().value;
      if (oldest !== undefined) this.sessions.delete(oldest);
    }
    const id = randomBytes(32).toString('base64url');
    this.sessions.set(id, this.now() + sessionLifetimeMs);
    return id;
  }

  /** Whether the Cookie header carries a live session. */
  isValid(cookieHeader: string | undefined): boolean {
    const id = sessionIdFrom(cookieHeader);
    if (id === undefined) return false;
    const expires = this.sessions.get(id);
    if (expires === undefined) return false;
    if (expires <= this.now()) {
      this.sessions.delete(id);
      return false;
    }
    return true;
  }

  /** Ends the session the Cookie header names, if any. */
  end(cookieHeader: string | undefined): void {
    const id = sessionIdFrom(cookieHeader);
    if (id !== undefined) this.sessions.delete(id);
  }

  get size(): number {
    return this.sessions.size;
  }

  private prune(): void {
    const now = this.now();
    for (const [id, expires] of this.sessions) if (expires <= now) this.sessions.delete(id);
  }
}

/** The session id in a Cookie header (`a=1; netkeep_session=<id>`), or undefined. */
export function sessionIdFrom(cookieHeader: string | undefined): string | undefined {
  if (cookieHeader === undefined) return undefined;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === sessionCookieName) {
      const value = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

/**
 * Whether the request's Origin header is this server's own origin: an http(s) origin whose
 * host:port is the Host the request was sent to (or, from a proxy TRUST_PROXY trusts, its
 * X-Forwarded-Host: the host the browser asked for). A missing or `null` Origin is not. The scheme
 * is not compared with the connection's because netkeep may sit behind a TLS-terminating proxy; one
 * host:port serves one scheme, so the host:port decides.
 */
export function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  const host = request.host;
  if (origin === undefined || origin === 'null' || host === '') return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  if (url.origin !== origin.replace(/\/$/, '')) return false; // no path, user or query smuggled in
  return url.host === host.toLowerCase();
}

/**
 * Failed sign-ins allowed per client address, and from all addresses together, within a window.
 * Only failures are throttled: a correct token always signs in, so that whoever shares an address
 * with a guesser (every user behind one reverse proxy) is never locked out. The throttle does not
 * stop guessing (the bearer header on any API path is checked without one; the token's entropy
 * does that); it bounds what wrong tokens cost: log lines, and answers that say 429 instead of 403.
 */
export interface SignInLimits {
  readonly perAddress: number;
  readonly global: number;
  readonly windowMs: number;
  /** Addresses tracked at once (a bound on memory); past it the oldest window is forgotten. */
  readonly trackedAddresses: number;
}

const signInLimits: SignInLimits = {
  perAddress: 10,
  global: 1000,
  windowMs: 5 * 60_000,
  trackedAddresses: 10_000,
};

interface Window {
  count: number;
  windowEnds: number;
}

/** Counts failed sign-ins per client address and in total, in fixed windows; says when to refuse. */
export class SignInLimiter {
  /** Address -> its window. A Map iterates in insertion order: oldest window first. */
  private readonly failures = new Map<string, Window>();
  private readonly all: Window = { count: 0, windowEnds: 0 };

  constructor(
    private readonly now: () => number = Date.now,
    private readonly limits: SignInLimits = signInLimits,
  ) {}

  /** Seconds a client must wait before a wrong token is answered 403 again (0: not throttled). */
  retryAfter(client: string): number {
    const now = this.now();
    let wait = 0;
    if (this.all.windowEnds > now && this.all.count >= this.limits.global) wait = this.all.windowEnds - now;
    const entry = this.failures.get(client);
    if (entry !== undefined && entry.windowEnds <= now) this.failures.delete(client);
    else if (entry !== undefined && entry.count >= this.limits.perAddress)
      wait = Math.max(wait, entry.windowEnds - now);
    return Math.ceil(wait / 1000);
  }

  recordFailure(client: string): void {
    const now = this.now();
    if (this.all.windowEnds <= now) {
      this.all.count = 0;
      this.all.windowEnds = now + this.limits.windowMs;
    }
    this.all.count++;
    const entry = this.failures.get(client);
    if (entry !== undefined && entry.windowEnds > now) {
      entry.count++;
      return;
    }
    this.failures.delete(client);
    // Windows end in insertion order: the oldest ones first, until the table has room.
    for (const [key, value] of this.failures) {
      if (value.windowEnds > now && this.failures.size < this.limits.trackedAddresses) break;
      this.failures.delete(key);
    }
    this.failures.set(client, { count: 1, windowEnds: now + this.limits.windowMs });
  }

  /** Addresses tracked now (for tests: the table is bounded). */
  get tracked(): number {
    return this.failures.size;
  }
}

export interface SessionRoutesOptions {
  readonly sessions: SessionStore;
  /** Checks a token in constant time (auth.ts). */
  readonly isToken: (candidate: string) => boolean;
  readonly limiter?: SignInLimiter;
}

const SessionBody = Type.Object(
  { token: Type.String({ maxLength: 1024, description: 'The API token.' }) },
  { additionalProperties: false },
);

const tags = ['session'];

function cookie(request: FastifyRequest, value: string, maxAgeSeconds: number): string {
  // Secure only over https: a Secure cookie would never be stored over the plain http of a LAN.
  const secure = request.protocol === 'https' ? '; Secure' : '';
  return `${sessionCookieName}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

function foreignOrigin(what: string): ApiError {
  return new ApiError(
    403,
    'Forbidden',
    `${what} is only accepted from this server's own pages.`,
    undefined,
    {},
    'FOREIGN_ORIGIN',
  );
}

export default async function sessionRoutes(app: App, opts: SessionRoutesOptions): Promise<void> {
  const limiter = opts.limiter ?? new SignInLimiter();

  app.post(
    '/session',
    {
      schema: {
        tags,
        summary: 'Sign in: exchange the API token for an HttpOnly, SameSite=Strict session cookie.',
        security: [],
        body: SessionBody,
        response: { 200: SuccessSchema, 400: ErrorRef, 403: ErrorRef, 429: ErrorRef },
      },
    },
    async (request, reply) => {
      // A page of another site must not even sign a browser in (login CSRF): a foreign Origin is
      // refused. Clients without an Origin (curl, scripts) are fine: they hold the token anyway.
      if (request.headers.origin !== undefined && !sameOrigin(request)) throw foreignOrigin('Sign-in');
      // A correct token always signs in: only failures are throttled (see SignInLimiter).
      if (!opts.isToken(request.body.token)) {
        const client = request.ip;
        const wait = limiter.retryAfter(client);
        if (wait > 0)
          throw new ApiError(
            429,
            'Too Many Requests',
            `Too many wrong tokens; try again in ${wait} s.`,
            undefined,
            { 'Retry-After': String(wait) },
            'SIGN_IN_RATE_LIMITED',
          );
        limiter.recordFailure(client);
        throw new ApiError(403, 'Forbidden', 'The token is not correct.', undefined, {}, 'WRONG_TOKEN');
      }
      const id = opts.sessions.create();
      void reply.header('Set-Cookie', cookie(request, id, Math.floor(sessionLifetimeMs / 1000)));
      void reply.header('Cache-Control', 'no-store');
      return { success: true as const };
    },
  );

  app.delete(
    '/session',
    {
      schema: {
        tags,
        summary: 'Sign out: ends the session of the cookie sent and clears the cookie.',
        security: [],
        response: { 200: SuccessSchema, 403: ErrorRef },
      },
    },
    async (request, reply) => {
      // Another page of the same site (another port) would send the cookie: it may not sign out.
      if (request.headers.origin !== undefined && !sameOrigin(request)) throw foreignOrigin('Sign-out');
      opts.sessions.end(request.headers.cookie);
      void reply.header('Set-Cookie', cookie(request, '', 0));
      return { success: true as const };
    },
  );
}
