/** The summary of one presence scan cycle: its schema (for answers and OpenAPI) and its type. */
import { Type, type Static } from '@sinclair/typebox';

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

export type CycleSummary = Static<typeof CycleSummarySchema>;
