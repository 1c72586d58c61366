/**
 * The security watch's routes: `GET /device/<mac>/ports` (the port watch's last result for a
 * device) and `GET /nettools/dhcp-watch` (the last DHCP watch). Thin: validate, read, answer.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { App } from '../http/app.js';
import { ErrorRef } from '../http/schemas.js';
import { MacParams, notFound, pathMac } from '../devices/params.js';
import type { WatchStore } from '../devices/watch-store.js';
import type { DhcpWatchResult } from './dhcp.js';

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

const DhcpWatchSchema = Type.Object(
  {
    success: Type.Literal(true),
    at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description:
        'When the last DHCP watch finished; null before the first (or when DHCP_SERVERS is empty).',
    }),
    servers: Type.Array(
      Type.Object(
        {
          ip: Type.String({ description: 'The server (its Server Identifier).' }),
          mac: Type.String({ description: "The server's MAC; '' when it did not answer ARP." }),
          offered: Type.String({ description: 'The address it offered.' }),
          trusted: Type.Boolean({ description: 'Listed in DHCP_SERVERS.' }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export interface WatchRoutesOptions {
  readonly store: WatchStore;
  readonly dhcp: { result(): DhcpWatchResult };
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

  app.get(
    '/nettools/dhcp-watch',
    {
      schema: {
        tags: ['nettools'],
        summary: 'The last DHCP watch: every server that answered a DHCPDISCOVER, trusted or not.',
        response: { 200: DhcpWatchSchema, 403: ErrorRef },
      },
    },
    async (): Promise<Static<typeof DhcpWatchSchema>> => {
      const { at, servers } = opts.dhcp.result();
      return { success: true, at, servers: [...servers] };
    },
  );
}
