/**
 * GET /metrics (token required): the Prometheus text of this server's registry. Also installs the
 * hooks that count every answered request by its route pattern.
 */
import type { onRequestHookHandler, onResponseHookHandler } from 'fastify';
import { hookList, type App } from '../http/app.js';
import { ErrorRef } from '../http/schemas.js';
import type { Metrics } from './metrics.js';
import type { RequestStats } from './request-stats.js';

export interface MetricsRoutesOptions {
  readonly metrics: Metrics;
}

/**
 * Counts every request on the application it is given, in `onResponse`; call it before any route
 * is added. Each route gets its own hook, made when the route is added with that route's
 * `RouteStats`, so a request costs no label lookup (`request.routeOptions` builds a new object on
 * each read). Requests no route matched (404, 405, 501, and the 403s of unknown paths) are
 * counted under the route label `unmatched`, by the one application-wide hook. Fastify's own
 * router errors (a malformed %-escape: `frameworkErrors` in app.ts) run no onResponse hook and are
 * not counted.
 *
 * `onResponse` runs when a response finishes, event streams included; an event stream that never
 * finishes (the client closed it, or it was dropped) is counted when it closes, on the routes that
 * declare they may answer with one (`config: { eventStream: true }`, see sse.ts), so that no other
 * request pays for a close listener. Callback hooks: these run on every request.
 */
export function instrumentRequests(app: App, requests: RequestStats): void {
  const unmatched = requests.route('unmatched');
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) unmatched.record(request.method, reply.raw.statusCode, reply.elapsedTime / 1000);
    done();
  });
  app.addHook('onRoute', (route) => {
    const stats = requests.route(route.url);
    const counted: onResponseHookHandler = (request, reply, done) => {
      stats.record(request.method, reply.raw.statusCode, reply.elapsedTime / 1000);
      done();
    };
    route.onResponse = [...hookList(route.onResponse), counted];
    if (route.config?.eventStream !== true) return;
    const streamClosed: onRequestHookHandler = (request, reply, done) => {
      const started = performance.now();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished && reply.raw.getHeader('content-type') === 'text/event-stream')
          stats.record(request.method, reply.raw.statusCode, (performance.now() - started) / 1000);
      });
      done();
    };
    route.onRequest = [...hookList(route.onRequest), streamClosed];
  });
}

export default async function metricsRoutes(app: App, { metrics }: MetricsRoutesOptions): Promise<void> {
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['metrics'],
        summary: 'Prometheus metrics (text exposition format)',
        description:
          'Every series is listed in docs/metrics.md. Device gauges are read from the database at scrape time.',
        response: {
          200: {
            description: 'Prometheus text format 0.0.4.',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          403: ErrorRef,
        },
      },
    },
    async (_request, reply) => {
      const text = await metrics.scrape();
      return reply.type(metrics.contentType).send(text);
    },
  );
}
