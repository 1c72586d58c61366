/**
 * Builds the Fastify application: JSON-only bodies with a size limit, strict schema validation,
 * authentication before anything is parsed, one error mapper, 404/405 answers, OpenAPI and the
 * docs page. Feature routes are registered by `src/server.ts`; this file knows none of them.
 */
import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type onRequestHookHandler,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import secureJson from 'secure-json-parse';
import { Type } from '@sinclair/typebox';
import { isPublicPath, registerAuth, tokenChecker, tokenEquals } from './auth.js';
import { handleClientError, registerCloseUnreadBodies, rewriteUrl, sendRouterError } from './connection.js';
import { DirectRoutes } from './direct-routes.js';
import { ApiError, errorBody, registerErrorHandler } from './errors.js';
import { ErrorSchema } from './schemas.js';
import sessionRoutes, { SessionStore } from './session.js';

export interface AppOptions {
  readonly token: string;
  readonly bodyLimit: number;
  /** Time to receive a whole request, headers and body (408 after it). Default 30000. */
  readonly requestTimeoutMs?: number;
  /** Connections served at once; more are closed at once. Default 256. */
  readonly maxConnections?: number;
  readonly logger: FastifyBaseLogger | boolean;
  /** Browser origins allowed by CORS (CORS_ORIGINS); empty: no CORS headers at all. */
  readonly corsOrigins?: readonly string[];
  /**
   * TRUST_PROXY: the peers whose X-Forwarded-For/-Proto/-Host are believed (request.ip and
   * request.protocol: the sign-in throttle, the logs, the cookie's Secure flag). Default: none.
   */
  readonly trustProxy?: boolean | readonly string[];
  /**
   * Reported by GET /health: `closed` while the database is not open, `down` while the store
   * cannot be reached (PostgreSQL stopped or unreachable; it recovers by itself).
   */
  readonly health?: () => Promise<'ok' | 'down' | 'closed'>;
  /**
   * Called before any route is added (the CORS plugin's included), so that the `onRoute` hooks it
   * adds (the request metrics) reach every route, /health included.
   */
  readonly instrument?: (app: App) => void;
  /**
   * What the app serves beyond /health and the routes registered on it: `full` (the default) adds
   * the OpenAPI document (/openapi.json), its page (/docs) and the console's sign-in (/session);
   * `minimal` adds nothing (probe mode, docs/probes.md: a probe exposes only what it needs).
   */
  readonly surface?: 'full' | 'minimal';
}

/** The application type every route module receives: Fastify with TypeBox type inference. */
export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** The version the OpenAPI document and the MCP server report. */
export const appVersion = '0.1.0';

const probedMethods: HTTPMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

declare module 'fastify' {
  interface FastifyInstance {
    /** The routes an in-process caller may call without `app.inject` (direct-routes.ts). */
    readonly directRoutes: DirectRoutes;
  }
}

export async function buildApp(options: AppOptions): Promise<App> {
  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  const isAuthorized = tokenChecker(options.token);
  const directRoutes = new DirectRoutes();
  const app = Fastify({
    loggerInstance: typeof options.logger === 'object' ? options.logger : undefined,
    logger: typeof options.logger === 'boolean' ? options.logger : undefined,
    bodyLimit: options.bodyLimit,
    // A body sent at 1 byte/s must not hold a connection forever: the whole request (headers and
    // body) must arrive within the limit, checked every second. Answers are not limited by it.
    requestTimeout,
    http: {
      requestTimeout,
      headersTimeout: requestTimeout,
      connectionsCheckingInterval: Math.min(1000, requestTimeout),
      // A request without Host is answered by our own hook below, in the JSON error body.
      requireHostHeader: false,
    },
    clientErrorHandler: handleClientError,
    rewriteUrl,
    // Off unless configured: otherwise any client could name its own address and scheme.
    trustProxy:
      typeof options.trustProxy === 'object' ? [...options.trustProxy] : (options.trustProxy ?? false),
    // No 414 for a long path segment: it reaches its route and gets the route's own 400 ("not a
    // MAC address"). Node's header size limit (16 KiB with the request line) bounds it anyway.
    routerOptions: { maxParamLength: 16_384 },
    // The router's own errors (bad %-encoding, a path segment over 100 characters): after auth, so
    // that they reveal nothing about protected paths, and in the JSON error body.
    frameworkErrors: (err, request, reply) => {
      const allowed = isPublicPath(request.url) || isAuthorized(request.headers.authorization);
      sendRouterError(err, allowed, reply);
    },
    // Strict types: never coerce "1" into 1 or drop unknown fields silently.
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false, allErrors: true, useDefaults: false },
    },
    // Fastify's own Ajv compiler, remembering the body validator of each route: a direct call of a
    // route (direct-routes.ts) validates with the route's own compiled function.
    schemaController: { compilersFactory: { buildValidator: directRoutes.validatorFactory() } },
    // While closing, our own hook answers 503 with the JSON error body (Fastify's has another shape).
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // One log line per request comes from the onResponse hook below, not Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
  }).withTypeProvider<TypeBoxTypeProvider>();

  registerErrorHandler(app, options.bodyLimit);
  app.decorate('directRoutes', directRoutes);
  app.addHook('onRoute', directRoutes.onRoute);
  // First: the CORS plugin below adds a route (OPTIONS *), and every route must get its hooks.
  options.instrument?.(app);
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // The per-request hooks here and in auth, connection and metrics are callback hooks, not async
  // ones: every request runs them, and a promise for each costs more than the check.
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) {
      done();
      return;
    }
    void reply.header('Connection', 'close');
    done(new ApiError(503, 'Unavailable', 'The server is shutting down.', undefined, {}, 'SHUTTING_DOWN'));
  });
  // Before authentication: a preflight (OPTIONS) carries no token, and the CORS headers must be on
  // every answer, a 403 included, for the calling page to read it.
  if (options.corsOrigins !== undefined && options.corsOrigins.length > 0)
    await app.register(cors, {
      origin: [...options.corsOrigins],
      methods: ['GET', 'POST', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type'],
      maxAge: 600,
    });
  const sessions = new SessionStore();
  registerAuth(app, options.token, sessions);
  app.addHook('onRequest', (request, _reply, done) => {
    done(
      request.raw.httpVersion === '1.1' && request.headers.host === undefined
        ? ApiError.badRequest('HTTP/1.1 requests must carry a Host header.', 'MISSING_HOST')
        : undefined,
    );
  });
  registerCloseUnreadBodies(app);
  registerJsonParser(app, options.bodyLimit);
  registerMethodNotAllowed(app);
  // One line per answer. A successful read (GET/HEAD under 400) is the hot path and says little,
  // so it is logged at debug (LOG_LEVEL=debug shows it): at info it cost a cached GET a fifth of
  // its CPU time (docs/benchmarks-history.md). Writes and every error answer are logged at info.
  app.addHook('onResponse', (request, reply, done) => {
    const read = reply.statusCode < 400 && (request.method === 'GET' || request.method === 'HEAD');
    // Not even the line's fields are made when the line would be dropped (the request's own
    // logger: a route may have its own level).
    if (read && request.log.level !== 'debug' && request.log.level !== 'trace') {
      done();
      return;
    }
    request.log[read ? 'debug' : 'info'](
      {
        method: request.method,
        url: request.url.split('?', 1)[0],
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        // The client's address: the proxy's, unless TRUST_PROXY believes its X-Forwarded-For.
        client: request.ip,
      },
      'request',
    );
    done();
  });

  app.addSchema(ErrorSchema);
  app.server.maxConnections = options.maxConnections ?? 256;
  if ((options.surface ?? 'full') === 'full') await registerDocsAndSignIn(app, options.token, sessions);
  app.get(
    '/health',
    {
      schema: {
        summary:
          'Liveness: ok once the database is open and answers. No token needed. 503 degraded while the store cannot be reached.',
        security: [],
        response: {
          200: Type.Object({ status: Type.Literal('ok') }),
          503: Type.Union([
            Type.Object({ status: Type.Literal('degraded'), store: Type.Literal('down') }),
            Type.Ref('Error'),
          ]),
        },
      },
    },
    async (_request, reply) => {
      const health = options.health === undefined ? 'ok' : await options.health();
      if (health === 'closed')
        throw new ApiError(
          503,
          'Unavailable',
          'The database is not open.',
          undefined,
          {},
          'DATABASE_UNAVAILABLE',
        );
      // The store is running but cannot be reached: the server is up, degraded, and recovers when
      // the store does (no restart needed), so a health check tells the two apart.
      if (health === 'down')
        return reply.code(503).send({ status: 'degraded' as const, store: 'down' as const });
      return { status: 'ok' as const };
    },
  );
  return app;
}

/** The OpenAPI document and its page (/openapi.json, /docs), and the console's sign-in (/session). */
async function registerDocsAndSignIn(app: App, token: string, sessions: SessionStore): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'netkeep',
        version: appVersion,
        description: 'Network tools and a device inventory for home and small-office networks.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    // The plugin's policy ends with upgrade-insecure-requests: over the plain http of a LAN the
    // browser would then ask for the page's assets over https and show a blank page.
    transformStaticCSP: withoutUpgradeInsecureRequests,
    uiConfig: { validatorUrl: null },
    // The plugin redirects /docs/static/index.html to /docs/ by rewriting a URL that ends with the
    // file name: with a query string it does not end so, and the page redirected to itself forever.
    uiHooks: {
      onRequest: (request, reply, done) => {
        const target = docsIndexRedirect(request.url);
        if (target === undefined) done();
        else void reply.redirect(target);
      },
    },
  });
  await app.register(sessionRoutes, { sessions, isToken: tokenEquals(token) });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

/** A route option's hooks as an array, whether it held none, one or several (for `onRoute` hooks). */
export function hookList<T>(hooks: T | T[] | undefined): T[] {
  if (hooks === undefined) return [];
  return Array.isArray(hooks) ? hooks : [hooks];
}

/** Where `/docs/static/index.html[?query]` goes (the docs page, with the query), or undefined for other URLs. */
function docsIndexRedirect(url: string): string | undefined {
  const at = url.indexOf('?');
  const path = at < 0 ? url : url.slice(0, at);
  if (path !== '/docs/static/index.html') return undefined;
  const query = at < 0 ? '' : url.slice(at + 1);
  return query === '' ? '/docs/' : `/docs/?${query}`;
}

/** A Content-Security-Policy without its upgrade-insecure-requests directive. */
export function withoutUpgradeInsecureRequests(policy: string): string {
  return policy
    .split(';')
    .map((directive) => directive.trim())
    .filter((directive) => directive !== '' && directive.toLowerCase() !== 'upgrade-insecure-requests')
    .join('; ');
}

/** JSON bodies only (415 otherwise); an empty body is "no body"; `__proto__` keys are refused. */
function registerJsonParser(app: App, bodyLimit: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }));
    } catch {
      done(ApiError.badRequest('The request body is not valid JSON.', 'INVALID_JSON'), undefined);
    }
  });
}

/**
 * Unknown paths answer 404; known paths with the wrong method answer 405 with an Allow header; a
 * method no route serves answers 501. A static route owns its path: `GET /device/copy` is a 405
 * (use POST), not `GET /device/:mac` with the MAC "copy".
 */
function registerMethodNotAllowed(app: App): void {
  const knownRoutes = FindMyWay();
  /** Methods of each route path without parameters. */
  const staticMethods = new Map<string, Set<string>>();
  const servedMethods = new Set<string>(['HEAD', 'OPTIONS', ...probedMethods]);
  const noop = (): void => undefined;
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      const upper = method.toUpperCase() as HTTPMethod;
      servedMethods.add(upper);
      if (upper === 'HEAD' || upper === 'OPTIONS') continue;
      if (!knownRoutes.hasRoute(upper, route.url)) knownRoutes.on(upper, route.url, noop);
      if (!/[:*]/.test(route.url)) {
        const own = staticMethods.get(route.url) ?? new Set<string>();
        staticMethods.set(route.url, own.add(upper));
      }
    }
    // A route with parameters yields to a static route of the same path (a hook on that route
    // only: the other routes need no check, and the route's pattern is known here for free). It
    // runs before the route's own onRequest hooks; a plugin's own hooks still run before it.
    if (/[:*]/.test(route.url)) route.onRequest = [yieldToStaticPath, ...hookList(route.onRequest)];
  });
  const allowedOn = (path: string): string[] => {
    const own = staticMethods.get(path);
    if (own !== undefined) return probedMethods.filter((method) => own.has(method));
    return probedMethods.filter((method) => knownRoutes.find(method, path) !== null);
  };
  const methodNotAllowed = (method: string, path: string, allowed: string[]): ApiError =>
    new ApiError(
      405,
      'Method Not Allowed',
      `${method} is not allowed on ${path}; use ${allowed.join(', ')}.`,
      undefined,
      { Allow: allowed.join(', ') },
    );
  const yieldToStaticPath: onRequestHookHandler = (request, _reply, done) => {
    const path = request.url.split('?', 1)[0] ?? '/';
    done(staticMethods.has(path) ? methodNotAllowed(request.method, path, allowedOn(path)) : undefined);
  };
  // After auth (registered later), before the body is read.
  app.addHook('onRequest', (request, _reply, done) => {
    done(
      servedMethods.has(request.method)
        ? undefined
        : new ApiError(
            501,
            'Not Implemented',
            `${request.method} is not a method netkeep serves.`,
            undefined,
            {},
            'NOT_IMPLEMENTED',
          ),
    );
  });
  app.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?', 1)[0] ?? '/';
    const allowed = allowedOn(path);
    const method = request.method === 'HEAD' ? 'GET' : request.method;
    // A route that exists for this method and found nothing (a missing static file) is a 404.
    if (allowed.length > 0 && !allowed.includes(method)) {
      const err = methodNotAllowed(request.method, path, allowed);
      return reply.code(405).headers(err.headers).send(errorBody(err));
    }
    return reply.code(404).send(errorBody(ApiError.notFound(`No route ${request.method} ${path}.`)));
  });
}
