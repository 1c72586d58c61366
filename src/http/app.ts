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
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import secureJson from 'secure-json-parse';
import { Type } from '@sinclair/typebox';
import { registerAuth, tokenEquals } from './auth.js';
import { ApiError, errorBody, registerErrorHandler } from './errors.js';
import { ErrorSchema } from './schemas.js';
import sessionRoutes, { SessionStore } from './session.js';

export interface AppOptions {
  readonly token: string;
  readonly bodyLimit: number;
  readonly logger: FastifyBaseLogger | boolean;
  /** Browser origins allowed by CORS (CORS_ORIGINS); empty: no CORS headers at all. */
  readonly corsOrigins?: readonly string[];
  /** Reported by GET /health; false while the database is not open. */
  readonly isHealthy?: () => boolean;
}

/** The application type every route module receives: Fastify with TypeBox type inference. */
export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

const probedMethods: HTTPMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export async function buildApp(options: AppOptions): Promise<App> {
  const app = Fastify({
    loggerInstance: typeof options.logger === 'object' ? options.logger : undefined,
    logger: typeof options.logger === 'boolean' ? options.logger : undefined,
    bodyLimit: options.bodyLimit,
    // Strict types: never coerce "1" into 1 or drop unknown fields silently.
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false, allErrors: true, useDefaults: false },
    },
    // While closing, our own hook answers 503 with the JSON error body (Fastify's has another shape).
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // One log line per request comes from the onResponse hook below, not Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
  }).withTypeProvider<TypeBoxTypeProvider>();

  registerErrorHandler(app);
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    void reply.header('Connection', 'close');
    throw new ApiError(503, 'Unavailable', 'The server is shutting down.', undefined, {}, 'SHUTTING_DOWN');
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
  registerJsonParser(app, options.bodyLimit);
  registerMethodNotAllowed(app);
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        url: request.url.split('?', 1)[0],
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'netkeep',
        version: '0.1.0',
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
  });
  app.addSchema(ErrorSchema);
  await app.register(sessionRoutes, { sessions, isToken: tokenEquals(options.token) });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get(
    '/health',
    {
      schema: {
        summary: 'Liveness: ok once the database is open. No token needed.',
        security: [],
        response: { 200: Type.Object({ status: Type.Literal('ok') }), 503: Type.Ref('Error') },
      },
    },
    async () => {
      if (options.isHealthy && !options.isHealthy())
        throw new ApiError(
          503,
          'Unavailable',
          'The database is not open.',
          undefined,
          {},
          'DATABASE_UNAVAILABLE',
        );
      return { status: 'ok' as const };
    },
  );
  return app;
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

/** Unknown paths answer 404; known paths with the wrong method answer 405 with an Allow header. */
function registerMethodNotAllowed(app: App): void {
  const knownRoutes = FindMyWay();
  const noop = (): void => undefined;
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      const upper = method.toUpperCase() as HTTPMethod;
      if (upper === 'HEAD' || upper === 'OPTIONS') continue;
      if (!knownRoutes.hasRoute(upper, route.url)) knownRoutes.on(upper, route.url, noop);
    }
  });
  app.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?', 1)[0] ?? '/';
    const allowed = probedMethods.filter((method) => knownRoutes.find(method, path) !== null);
    if (allowed.length > 0) {
      const err = new ApiError(
        405,
        'Method Not Allowed',
        `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}.`,
        undefined,
        {
          Allow: allowed.join(', '),
        },
      );
      return reply.code(405).headers(err.headers).send(errorBody(err));
    }
    return reply.code(404).send(errorBody(ApiError.notFound(`No route ${request.method} ${path}.`)));
  });
}
