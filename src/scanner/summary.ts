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
    named: Type.Integer({ description: 'Devices named or renamed by automatic naming in this cycle.' }),
    nameSourceErrors: Type.Array(
      Type.Object(
        {
          source: Type.Union([
            Type.Literal('dhcp'),
            Type.Literal('mdns'),
            Type.Literal('netbios'),
            Type.Literal('dns'),
          ]),
          message: Type.String(),
        },
        { additionalProperties: false },
      ),
      {
        description:
          'Naming troubles of this cycle (a lease file missing or not understood, a DNS server not answering): warnings, never a failed cycle.',
      },
    ),
  },
  { $id: 'ScanCycle', additionalProperties: false },
);

export type CycleSummary = Static<typeof CycleSummarySchema>;
