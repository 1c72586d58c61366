/** POST /device/<mac>/resolve-name: every enabled name source asked now, the rules applied. */
import { Type } from '@sinclair/typebox';
import type { ChangeFeed } from '../events.js';
import type { App } from '../http/app.js';
import { commonErrors, ErrorRef } from '../http/schemas.js';
import { MacParams, pathMac } from '../devices/params.js';
import type { DeviceNamer } from './namer.js';
import { autoSources, nameSources } from './types.js';

const SourceSchema = Type.Union(
  autoSources.map((s) => Type.Literal(s)),
  { description: 'A name source.' },
);

const ResolveNameAnswer = Type.Object(
  {
    success: Type.Literal(true),
    name: Type.String({ description: 'The device name after the lookup (a user name is kept).' }),
    source: Type.Union(
      nameSources.map((s) => Type.Literal(s)),
      { description: 'devNameSource after the lookup.' },
    ),
    candidates: Type.Array(Type.Object({ source: SourceSchema, name: Type.String() }), {
      description: 'What each source answered, best-ranked first (dhcp, mdns, netbios, dns).',
    }),
  },
  { additionalProperties: false },
);

export interface NameRoutesOptions {
  readonly namer: DeviceNamer;
  readonly feed?: ChangeFeed;
}

export default async function nameRoutes(app: App, opts: NameRoutesOptions): Promise<void> {
  const { namer, feed } = opts;
  app.post(
    '/device/:mac/resolve-name',
    {
      schema: {
        tags: ['devices'],
        summary:
          'Ask every enabled name source (DHCP leases, mDNS, NetBIOS, reverse DNS) for the device now and store the result; a user or import name is reported, not replaced.',
        params: MacParams,
        response: { 200: ResolveNameAnswer, ...commonErrors, 404: ErrorRef },
      },
    },
    async (request) => {
      const mac = await namer.deviceMac(pathMac(request.params.mac));
      const answer = await namer.resolve(mac, new Date());
      feed?.publish('device', { mac, change: 'updated' });
      return {
        success: true as const,
        name: answer.name,
        source: (nameSources as readonly string[]).includes(answer.source)
          ? (answer.source as (typeof nameSources)[number])
          : ('' as const),
        candidates: answer.candidates.map((c) => ({ source: c.source, name: c.name })),
      };
    },
  );
}
