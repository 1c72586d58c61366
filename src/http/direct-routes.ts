/**
 * Routes that an in-process caller (an MCP tool call, src/mcp/routes.ts) may call without a second
 * HTTP request through `app.inject`, and still get exactly the route: the same logic, the same
 * validation and the same 400 reasons, the same answer bytes.
 *
 * How, in three parts:
 * - The route's logic is ONE function of its validated body (`DirectRun`). `directRoute(run)` makes
 *   the route's handler from it and puts `run` in the route's config, so the route and a direct
 *   caller both call that function; neither has a copy of the other's code.
 * - The route's validator is the one Fastify compiled for it: `validatorFactory` wraps Fastify's
 *   own Ajv compiler (the same options, the same shared schemas) and remembers, for each route, the
 *   function it compiled. A direct call runs that function on the arguments; when it fails, the
 *   error is what Fastify would throw (`validation`, `validationContext`), so errors.ts words it
 *   the same 400.
 * - Only routes whose answer depends on nothing else qualify (checked when the route is added):
 *   no path parameters, query or header schema, and no hooks of their own before the handler.
 *   Everything a request runs before the handler (auth, the JSON parser, the app-wide hooks) has
 *   then already run for the caller's own request (POST /mcp, which needs the same token, or a
 *   cookie from this server's own pages, as every route).
 *
 * Why: `app.inject` builds a fake request and response and runs Fastify's whole request cycle again
 * (hooks, the auth check, the log line, the answer copied into a string): for the MCP search it
 * cost about as much as the search itself (docs/mcp.md).
 */
import AjvCompiler, { type ValidatorFactory } from '@fastify/ajv-compiler';
import type { FastifyReply, RouteOptions } from 'fastify';
import { errorResponse } from './errors.js';

/**
 * What a direct route answers: its status, content type and body, JSON already made (text or its
 * UTF-8 bytes: never serialized again, so a direct caller gets the bytes the route sends).
 */
export interface DirectAnswer {
  readonly status: number;
  readonly type: string;
  readonly body: string | Buffer;
}

/** A direct route's logic, given the body its route's schema has already accepted. */
export type DirectRun<Body> = (body: Body) => Promise<DirectAnswer>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's logic, for direct callers (`directRoute`). */
    direct?: DirectRun<never>;
  }
}

/**
 * The `config` (for the route's options) and the `handler` of a route whose logic is `run`. The
 * handler sends `run`'s body as it is; what `run` throws goes to the error handler.
 */
export function directRoute<Body>(run: DirectRun<Body>): {
  config: { direct: DirectRun<never> };
  handler: (request: { body: Body }, reply: FastifyReply) => Promise<FastifyReply>;
} {
  return {
    config: { direct: run },
    handler: async (request, reply) => {
      const answer = await run(request.body);
      return reply.code(answer.status).type(answer.type).send(answer.body);
    },
  };
}

/** One compiled Ajv validator, as Fastify's compiler returns it. */
type Validator = ReturnType<ReturnType<ValidatorFactory>>;

/**
 * A direct call's outcome: the route's answer, or the error answer it would have sent (as its
 * error handler words it); `unexpected` holds an error nobody reported on purpose, to be logged.
 */
export interface DirectOutcome extends DirectAnswer {
  readonly unexpected?: unknown;
}

export class DirectRoutes {
  readonly #bodyValidators = new Map<string, Validator>();
  readonly #runs = new Map<string, DirectRun<unknown>>();

  /**
   * For Fastify's `schemaController.compilersFactory.buildValidator`: Fastify's default compiler
   * (@fastify/ajv-compiler, the same Ajv options and shared schemas), remembering each body
   * validator it compiles for a route.
   */
  validatorFactory(): ValidatorFactory {
    const base = AjvCompiler();
    return (externalSchemas, options) => {
      const compile = base(externalSchemas, options);
      return (route) => {
        const validate = compile(route);
        if (route.httpPart === 'body' && route.method !== undefined && route.url !== undefined)
          this.#bodyValidators.set(key(route.method, route.url), validate);
        return validate;
      };
    };
  }

  /** For an `onRoute` hook: records a direct route, refusing one that does not qualify. */
  readonly onRoute = (route: RouteOptions): void => {
    const schema = (route.schema ?? {}) as Record<string, unknown>;
    // Given a compiler factory, Fastify counts the compiler as a custom one and no longer lowers
    // the names of a header schema's properties before compiling it (the only difference): so
    // every route's header schema must name its headers in lower case already.
    const headers = (schema.headers as { properties?: object } | undefined)?.properties ?? {};
    if (Object.keys(headers).some((name) => name !== name.toLowerCase()))
      throw new Error(`${route.url}: name the headers of a header schema in lower case`);
    const run = route.config?.direct;
    if (run === undefined) return;
    const hooks = [route.onRequest, route.preParsing, route.preValidation, route.preHandler];
    if (
      /[:*]/.test(route.url) ||
      schema.params !== undefined ||
      schema.querystring !== undefined ||
      schema.headers !== undefined ||
      hooks.some((hook) => hook !== undefined && (!Array.isArray(hook) || hook.length > 0))
    )
      throw new Error(`${route.url}: a direct route takes a body only and has no hooks of its own`);
    for (const method of Array.isArray(route.method) ? route.method : [route.method])
      this.#runs.set(key(method, route.url), run as DirectRun<unknown>);
  };

  /**
   * The route `method url` as a function of its body, or undefined when it is not a direct route.
   * The function validates the body with the route's compiled validator and answers the route's
   * answer, or the error answer the route would send (its 400 for a body its schema refuses).
   */
  find(method: string, url: string): ((body: unknown) => Promise<DirectOutcome>) | undefined {
    const run = this.#runs.get(key(method, url));
    if (run === undefined) return undefined;
    const validate = this.#bodyValidators.get(key(method, url));
    // Never a direct call that skips validation: the route must have a body schema, compiled (the
    // app is ready) through validatorFactory.
    if (validate === undefined) throw new Error(`${method} ${url}: no compiled body validator`);
    return async (body) => {
      try {
        // As Fastify validates: no body is null to the validator.
        if (validate(body ?? null) !== true)
          throw Object.assign(new Error('body validation failed'), {
            statusCode: 400,
            validation: validate.errors ?? [],
            validationContext: 'body',
          });
        return await run(body);
      } catch (err) {
        const { status, body: errorBody, unexpected } = errorResponse(err);
        return {
          status,
          type: 'application/json; charset=utf-8',
          body: JSON.stringify(errorBody),
          ...(unexpected ? { unexpected: err } : {}),
        };
      }
    };
  }
}

function key(method: string, url: string): string {
  return `${method.toUpperCase()} ${url}`;
}
