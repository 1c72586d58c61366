/**
 * Bearer-token authentication. The check runs in `onRequest`, before Fastify reads or validates
 * the body, so an unauthenticated client cannot make the server parse anything. Tokens are
 * compared through SHA-256 digests with timingSafeEqual: constant time, whatever the lengths.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';

/** Paths that hold no data and need no token. */
const publicPaths = new Set(['/health', '/openapi.json', '/docs']);

export function isPublicPath(url: string): boolean {
  const path = url.split('?', 1)[0] ?? '';
  return publicPaths.has(path) || path.startsWith('/docs/');
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Returns a checker bound to one token; an empty token never authorises anything. */
export function tokenChecker(token: string): (header: string | undefined) => boolean {
  const expected = digest(token);
  return (header) => {
    if (token.length === 0 || header === undefined) return false;
    // The scheme name is case-insensitive (RFC 7235); the token is not.
    const match = /^Bearer ([^\s]+)$/i.exec(header);
    return match?.[1] !== undefined && timingSafeEqual(digest(match[1]), expected);
  };
}

export function registerAuth(app: FastifyInstance, token: string): void {
  const isAuthorized = tokenChecker(token);
  app.addHook('onRequest', async (request: FastifyRequest) => {
    if (isPublicPath(request.url)) return;
    if (!isAuthorized(request.headers.authorization)) throw ApiError.forbidden();
  });
}

/**
 * The token from API_TOKEN, or the one kept in $DATA_DIR/api_token, generated (32 random bytes,
 * base64url) on first start and written with mode 0600.
 */
export function resolveToken(
  configured: string,
  fromFile: boolean,
  dataDir: string,
): { token: string; file?: string } {
  if (!fromFile) return { token: configured };
  const file = join(dataDir, 'api_token');
  if (existsSync(file)) {
    const stored = readFileSync(file, 'utf8').trim();
    if (stored.length > 0) return { token: stored, file };
  }
  mkdirSync(dataDir, { recursive: true });
  const token = randomBytes(32).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { token, file };
}
