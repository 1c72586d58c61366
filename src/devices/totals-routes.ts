/**
 * The status counters: `GET /devices/totals` as NetAlertX answers it (a bare array of six integers
 * that dashboard widgets read by index) and `GET /devices/totals/named` with the same numbers by
 * name. The groups and their SQL are status.ts's, shared with the device list's `?status=`.
 */
import { Type } from '@sinclair/typebox';
import type { App } from '../http/app.js';
import { ErrorRef } from '../http/schemas.js';
import type { DeviceStore } from '../store/devices.js';
import { deviceGroups, totalsArray, totalsNames } from './status.js';

export interface TotalsRoutesOptions {
  readonly repository: DeviceStore;
}

const tags = ['devices'];
const totalsOrder = deviceGroups.map((group) => totalsNames[group]).join(', ');

const NamedTotals = Type.Object(
  Object.fromEntries(deviceGroups.map((group) => [totalsNames[group], Type.Integer({ minimum: 0 })])),
  { additionalProperties: false },
);

export default async function totalsRoutes(app: App, { repository }: TotalsRoutesOptions): Promise<void> {
  // Both answers as text, made again only when a count moved: dashboards poll these, and
  // serialising the same six numbers per request was most of what a request cost after the counts.
  let counts: number[] = [];
  let arrayText = '';
  let namedText = '';
  const answers = async (): Promise<{ arrayText: string; namedText: string }> => {
    const now = totalsArray(await repository.totals());
    if (now.length !== counts.length || now.some((n, i) => n !== counts[i])) {
      counts = now;
      arrayText = JSON.stringify(now);
      namedText = JSON.stringify({
        success: true,
        totals: Object.fromEntries(deviceGroups.map((group, i) => [totalsNames[group], now[i]])),
      });
    }
    return { arrayText, namedText };
  };

  app.get(
    '/devices/totals',
    {
      schema: {
        tags,
        summary: `Device counts as a bare array [${totalsOrder}] (NetAlertX's shape).`,
        description:
          'devices: not archived; connected: not archived and present in the last scan; favorites: not archived and devFavorite; new: not archived and devIsNew; down: not archived, devAlertDown set and absent from the last scan; archived: devIsArchived.',
        response: {
          200: Type.Array(Type.Integer({ minimum: 0 }), { minItems: 6, maxItems: 6 }),
          403: ErrorRef,
        },
      },
    },
    // The counts are kept by the store (never a scan per request).
    async (_request, reply) =>
      reply.type('application/json; charset=utf-8').send((await answers()).arrayText),
  );

  app.get(
    '/devices/totals/named',
    {
      schema: {
        tags,
        summary: `Device counts by name: {${totalsOrder}} (the groups of GET /devices/totals).`,
        response: {
          200: Type.Object({ success: Type.Literal(true), totals: NamedTotals }),
          403: ErrorRef,
        },
      },
    },
    async (_request, reply) =>
      reply.type('application/json; charset=utf-8').send((await answers()).namedText),
  );
}
