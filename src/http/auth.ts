/**
 * Bearer-token authentication. The check runs in `onRequest`, before Fastify reads or validates
 * the body, so an unauthenticated client cannot make the server parse anything. Tokens are
 * compared with timingSafeEqual (see `tokenEquals`).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';
import { sameOrigin, type SessionStore } from './session.js';

/** Paths that hold no data and need no token (the console's shell and assets, sign-in itself). */
const publicPaths = new Set(['/health', '/openapi.json', '/docs', '/', '/ui', '/session']);

export function isPublicPath(url: string): boolean {
  const path = url.split('?', 1)[0] ?? '';
  return publicPaths.has(path) || path.startsWith('/docs/') || path.startsWith('/ui/');
}

/**
 * NetAlertX also reads its token from `?token=`; netkeep never does (URLs end up in proxy logs,
 * browser history and Referer headers). Such a request is refused saying so, rather than with the
 * bare "Not authorized" that leaves the client guessing. It tells nothing about which paths exist.
 */
function tokenInQuery(url: string): boolean {
  const at = url.indexOf('?');
  return at >= 0 && new URLSearchParams(url.slice(at + 1)).has('token');
}

const queryTokenRefused = () =>
  new ApiError(
    403,
    'Forbidden',
    'netkeep does not read a token from the query string (URLs end up in logs): send it as the header Authorization: Bearer <token> (see docs/netalertx.md).',
    undefined,
    {},
    'TOKEN_IN_QUERY',
  );

/** Methods that change nothing: a cookie alone may authorise them from anywhere SameSite allows. */
const safeMethods = new Set(['GET', 'HEAD']);

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route runs a tool or sends traffic whatever its method (a GET included): a request that
     * only the session cookie authorises must come from this server's own pages (`toolRoute`).
     */
    runsTool?: boolean;
  }
}

/** Route config of a route that runs a tool on GET (spread it into the route's `config`). */
export const toolRoute = { runsTool: true } as const;

/**
 * Whether a cookie-authorised request that acts comes from this server's own pages: its Origin is
 * ours, or the browser says `Sec-Fetch-Site: same-origin`. Browsers send no Origin with a
 * same-origin GET but do send Sec-Fetch-Site, and page script can set neither. `same-site` (another
 * port or subdomain of the site, which SameSite=Strict lets the cookie reach) is not enough.
 */
function fromOwnPage(request: FastifyRequest): boolean {
  return sameOrigin(request) || request.headers['sec-fetch-site'] === 'same-origin';
}

/**
 * Compares a candidate with the token in constant time; an empty token never matches.
 *
 * Every byte of the token is compared, whatever the candidate holds: timingSafeEqual needs two
 * buffers of one length, so a candidate of another length is replaced by the token itself and the
 * answer is false. The time then depends on the candidate's length (the client's own data) and not
 * on the token's content. Why not SHA-256 digests of both (equal lengths for free): hashing on
 * every request cost a cached GET about a sixth of its CPU time in the server
 * (docs/benchmarks-history.md).
 */
export function tokenEquals(token: string): (candidate: string) => boolean {
  const expected = Buffer.from(token, 'utf8');
  return (candidate) => {
    const given = Buffer.from(candidate, 'utf8');
    const sameLength = given.length === expected.length;
    const equal = timingSafeEqual(sameLength ? given : expected, expected);
    return equal && sameLength && expected.length > 0;
  };
}

/** Returns a checker bound to one token; an empty token never authorises anything. */
export function tokenChecker(token: string): (header: string | undefined) => boolean {
  const equals = tokenEquals(token);
  return (header) => {
    if (header === undefined) return false;
    // The scheme name is case-insensitive (RFC 7235); the token is not.
    const match = /^Bearer ([^\s]+)$/i.exec(header);
    return match?.[1] !== undefined && equals(match[1]);
  };
}

/**
 * The bearer header or a console session cookie authorises a request. A request that only the
 * cookie authorises and that may change something must carry this server's own Origin, and one
 * that runs a tool (a GET included: `toolRoute`) must come from this server's own pages: a defence
 * against cross-site request forgery on top of SameSite=Strict, which lets every page of the same
 * site (another port of the same host) send the cookie.
 */
export function registerAuth(app: FastifyInstance, token: string, sessions: SessionStore): void {
  const isAuthorized = tokenChecker(token);
  /** Why the request may not proceed, or undefined when it may. */
  const refusal = (request: FastifyRequest): ApiError | undefined => {
    if (isPublicPath(request.url)) return undefined;
    // A probe's upload is authorised by its probe token, in the probes plugin's own hook.
    if (request.method === 'POST' && request.routeOptions.url === '/probes/cycles') return undefined;
    if (isAuthorized(request.headers.authorization)) return undefined;
    if (!sessions.isValid(request.headers.cookie))
      return tokenInQuery(request.url) ? queryTokenRefused() : ApiError.forbidden();
    if (!safeMethods.has(request.method) && !sameOrigin(request))
      return new ApiError(
        403,
        'Forbidden',
        "A change authorised by the session cookie must come from this server's own pages (Origin).",
        undefined,
        {},
        'ORIGIN_REQUIRED',
      );
    if (request.routeOptions.config.runsTool === true && !fromOwnPage(request))
      return new ApiError(
        403,
        'Forbidden',
        "A tool run authorised by the session cookie must come from this server's own pages (Origin, or Sec-Fetch-Site: same-origin).",
        undefined,
        {},
        'ORIGIN_REQUIRED',
      );
    return undefined;
  };
  // A callback hook, not an async one: it runs on every request, and a promise per request costs.
  app.addHook('onRequest', (request, _reply, done) => {
    done(refusal(request));
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
