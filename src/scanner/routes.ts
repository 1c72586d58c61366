/**
 * POST /nettools/scan (run a presence scan cycle now) and GET /nettools/scan (the last cycle).
 * Thin: the Scanner does the work and throws ApiError for 409/500.
 */
import { Type } from '@sinclair/typebox';
import type { App } from '../http/app.js';
import { ErrorRef } from '../http/schemas.js';
import { streamWork, wantsEventStream, type EventStreamOptions } from '../http/sse.js';
import type { Scanner } from './scanner.js';

export const CycleSummarySchema = Type.Object(
  {
    startedAt: Type.String({ format: 'date-time', description: 'When the cycle started (ISO 8601, Z).' }),
    finishedAt: Type.String({ format: 'date-time', description: 'When the cycle finished.' }),
    durationMs: Type.Integer({ description: 'Wall-clock duration in milliseconds.' }),
    devicesSeen: Type.Integer({ description: 'Distinct MAC addresses discovered.' }),
    newDevices: Type.Integer({ description: 'Devices created by the cycle (0 when it failed).' }),
    errors: Type.Array(Type.String(), {
      description: 'Why the cycle failed; empty on success. A failed cycle changes nothing.',
    }),
  },
  { $id: 'ScanCycle', additionalProperties: false },
);

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

export function registerScanRoutes(app: App, scanner: Scanner, streams: EventStreamOptions): void {
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
}
