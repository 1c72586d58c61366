/**
 * GET /metrics (token required): the Prometheus text of this server's registry. Also installs the
 * hooks that count every answered request by its route pattern.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../http/app.js';
import { ErrorRef } from '../http/schemas.js';
import type { Metrics } from './metrics.js';

export interface MetricsRoutesOptions {
  readonly metrics: Metrics;
}

/** The route label: the matched pattern (bounded cardinality), or `unmatched` for a 404/405. */
function routeOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? 'unmatched';
}

/**
 * Counts every request on the application it is given (call it on the root, before the routes), in
 * `onResponse`. That hook runs when a response finishes, event streams included; an event stream
 * that never finishes (the client closed it, or it was dropped) is counted when it closes, on the
 * routes that declare they may answer with one (`config: { eventStream: true }`, see sse.ts), so
 * that no other request pays for a close listener. Callback hooks: these run on every request.
 */
export function instrumentRequests(app: App, metrics: Metrics): void {
  const record = (request: FastifyRequest, reply: FastifyReply, seconds: number): void => {
    metrics.recordRequest(request.method, routeOf(request), reply.raw.statusCode, seconds);
  };
  app.addHook('onResponse', (request, reply, done) => {
    record(request, reply, reply.elapsedTime / 1000);
    done();
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (request.routeOptions.config.eventStream === true) {
      const started = performance.now();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished && reply.raw.getHeader('content-type') === 'text/event-stream')
          record(request, reply, (performance.now() - started) / 1000);
      });
    }
    done();
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
