/**
 * Probe mode's one route besides /health: GET /nettools/scan, the probe's scanner (enabled,
 * running, last cycle, as on any netkeep) with its uploads to the hub beside it (spool).
 */
import { Type } from '@sinclair/typebox';
import type { App } from '../http/app.js';
import { ErrorRef } from '../http/schemas.js';
import { ScanStatusSchema } from '../scanner/routes.js';
import { CycleSummarySchema } from '../scanner/summary.js';
import type { Probe } from './probe.js';

const ProbeStatusSchema = Type.Object(
  {
    ...ScanStatusSchema.properties,
    probe: Type.Object(
      {
        hub: Type.String({ description: 'The hub (PROBE_HUB_URL).' }),
        spooledCycles: Type.Integer({ description: 'Cycles on disk the hub has not taken yet.' }),
        droppedCycles: Type.Integer({
          description: 'Cycles dropped (PROBE_SPOOL_MAX) not yet reported to the hub.',
        }),
        lastUploadAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
        lastError: Type.Union([Type.String(), Type.Null()], {
          description: 'Why the last upload failed; null after a success.',
        }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export interface ProbeStatusRoutesOptions {
  readonly probe: Probe;
}

export default async function probeStatusRoutes(
  app: App,
  { probe }: ProbeStatusRoutesOptions,
): Promise<void> {
  app.addSchema(CycleSummarySchema);
  app.get(
    '/nettools/scan',
    {
      schema: {
        tags: ['scanning'],
        summary: "The probe's scanner (enabled, running, last cycle) and its uploads to the hub (spool).",
        response: { 200: ProbeStatusSchema, 403: ErrorRef },
      },
    },
    async () => ({ success: true as const, ...probe.status() }),
  );
}
