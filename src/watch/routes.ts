/**
 * The security watch's routes: `GET /device/<mac>/ports` (the port watch's last result for a
 * device) and `GET /nettools/dhcp-watch` (the last DHCP watch). Thin: validate, read, answer.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { App } from '../http/app.js';
import { ErrorRef } from '../http/schemas.js';
import { MacParams, notFound, pathMac } from '../devices/params.js';
import type { WatchStore } from '../devices/watch-store.js';

const PortsSchema = Type.Object(
  {
    success: Type.Literal(true),
    scannedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When the port watch last scanned the device; null: never.',
    }),
    ports: Type.Array(
      Type.Object(
        {
          port: Type.Integer({ minimum: 1, maximum: 65535 }),
          protocol: Type.Union([Type.Literal('tcp'), Type.Literal('udp')]),
          service: Type.String({ description: "nmap's service name; '' when unknown." }),
          product: Type.String(),
          version: Type.String(),
          firstSeen: Type.String({ format: 'date-time', description: 'First scan that found it open.' }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
type PortsJson = Static<typeof PortsSchema>;

export interface WatchRoutesOptions {
  readonly store: WatchStore;
}

export default async function watchRoutes(app: App, opts: WatchRoutesOptions): Promise<void> {
  app.get(
    '/device/:mac/ports',
    {
      schema: {
        tags: ['devices'],
        summary: 'Open ports of the device as the last port watch found them (devWatchPorts).',
        params: MacParams,
        response: { 200: PortsSchema, 400: ErrorRef, 403: ErrorRef, 404: ErrorRef },
      },
    },
    async (request): Promise<PortsJson> => {
      const mac = pathMac(request.params.mac);
      if (!opts.store.deviceExists(mac)) throw notFound(mac);
      const { scannedAt, ports } = opts.store.ports(mac);
      return {
        success: true,
        scannedAt,
        ports: ports.map((p) => ({
          port: p.port,
          protocol: p.protocol,
          service: p.service,
          product: p.product,
          version: p.version,
          firstSeen: p.firstSeen,
        })),
      };
    },
  );
}
