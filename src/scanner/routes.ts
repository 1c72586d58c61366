/**
 * POST /nettools/scan (run a presence scan cycle now) and GET /nettools/scan (the last cycle).
 * Thin: the Scanner does the work and throws DomainError (conflict, command-failed).
 */
import { Type } from '@sinclair/typebox';
import type { App } from '../http/app.js';
import { toolRoute } from '../http/auth.js';
import { commonErrors, ErrorRef, optionalBody, SuccessMessageSchema } from '../http/schemas.js';
import { stringEnum } from '../enum-schema.js';
import { eventStreamRoute, streamWork, wantsEventStream, type EventStreamOptions } from '../http/sse.js';
import type { Scanner } from './scanner.js';
import { CycleSummarySchema } from './summary.js';

export const ScanStatusSchema = Type.Object(
  {
    success: Type.Literal(true),
    enabled: Type.Boolean({ description: 'False when SCAN_SUBNETS is empty (scanning off).' }),
    running: Type.Boolean({ description: 'A cycle is running now.' }),
    lastCycle: Type.Union([Type.Ref('ScanCycle'), Type.Null()], {
      description: 'The last finished cycle; null before the first.',
    }),
  },
  { additionalProperties: false },
);

const protectedErrors = { 403: ErrorRef } as const;

export interface ScanRoutesOptions {
  /** The presence scanner the routes report on and start cycles of. */
  readonly scanner: Scanner;
  /** Event streams of POST /nettools/scan with Accept: text/event-stream (keep-alive interval). */
  readonly streams: EventStreamOptions;
}

/** The presence-scan routes, as an encapsulated Fastify plugin (register it with `app.register`). */
export default async function scanRoutes(app: App, { scanner, streams }: ScanRoutesOptions): Promise<void> {
  app.addSchema(CycleSummarySchema);

  app.get(
    '/nettools/scan',
    {
      schema: {
        tags: ['scanning'],
        summary: 'The presence scanner: enabled, running, and the last cycle.',
        response: { 200: ScanStatusSchema, ...protectedErrors },
      },
    },
    async () => ({ success: true as const, ...scanner.status() }),
  );

  app.post(
    '/nettools/scan',
    {
      config: eventStreamRoute,
      schema: {
        tags: ['scanning'],
        summary: 'Run a presence scan cycle now; answers when it has finished.',
        description:
          '409 when scanning is not configured (SCAN_SUBNETS empty) or a cycle is already running; ' +
          '500 when the cycle failed (it changed nothing; details lists the errors). ' +
          'With `Accept: text/event-stream`: 200 event stream of `progress` messages {"subnet", "devicesSeen"} ' +
          'as each subnet is discovered, then one `result` (this body) or `error` (the error body plus `status`).',
        response: { 200: ScanStatusSchema, 409: ErrorRef, 500: ErrorRef, 503: ErrorRef, ...protectedErrors },
      },
    },
    async (request, reply) => {
      const cycle = async (onProgress?: (progress: unknown) => void) => {
        await scanner.runNow(onProgress);
        return { success: true as const, ...scanner.status() };
      };
      if (!wantsEventStream(request)) return cycle();
      return streamWork(request, reply, streams, (progress) => cycle(progress));
    },
  );

  // NetAlertX: api_trigger_scan (server/api_server/api_server_start.py), TriggerScanRequest
  // (openapi/schemas.py): queue a scan and answer at once. NetAlertX offers GET on its REST path
  // and POST on its MCP path; both are here. `type` names NetAlertX's scan plugin; netkeep has one
  // presence scan (SCAN_TOOL) and accepts the names that mean it.
  const triggerSchema = {
    tags: ['scanning'],
    summary: 'Start a presence scan cycle and answer at once (GET /nettools/scan shows its outcome).',
    description: '409 when scanning is not configured (SCAN_SUBNETS empty) or a cycle is already running.',
    response: { 200: SuccessMessageSchema, ...commonErrors, 409: ErrorRef, 503: ErrorRef },
  };
  const scanTypes = ['ARPSCAN', 'NMAPDEV'] as const;
  const trigger = () => {
    scanner.trigger();
    return { success: true as const, message: 'Scan cycle started.' };
  };
  // A GET that starts a cycle: a cookie-only request must come from this server's own pages.
  app.get('/nettools/trigger-scan', { schema: triggerSchema, config: toolRoute }, async () => trigger());
  app.post(
    '/nettools/trigger-scan',
    {
      schema: {
        ...triggerSchema,
        body: Type.Object(
          {
            type: Type.Optional(
              stringEnum(scanTypes, "NetAlertX scan type; both run netkeep's presence scan (SCAN_TOOL)."),
            ),
          },
          { additionalProperties: false },
        ),
      },
      preValidation: optionalBody,
    },
    async () => trigger(),
  );
}
