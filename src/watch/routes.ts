/**
 * The security watch's routes: `GET /device/<mac>/ports` (the port watch's last result for a
 * device), NetAlertX's `POST /device/open_ports` `{target}` (the same stored ports, the device named
 * by an IP or a MAC; here beside the GET so that both answer ports in one shape) and
 * `GET /nettools/dhcp-watch` (the last DHCP watch). Thin: validate, read, answer.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { App } from '../http/app.js';
import { commonErrors, ErrorRef } from '../http/schemas.js';
import { MacParams, notFound, pathMac } from '../devices/params.js';
import type { StoredPort, WatchStore } from '../store/watch.js';
import { ipOrMacPattern } from '../validation.js';
import type { DhcpWatchResult } from './dhcp.js';
import { openPortsOf } from './open-ports.js';

const PortSchema = Type.Object(
  {
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    protocol: Type.Union([Type.Literal('tcp'), Type.Literal('udp')]),
    service: Type.String({ description: "nmap's service name; '' when unknown." }),
    product: Type.String(),
    version: Type.String(),
    firstSeen: Type.String({ format: 'date-time', description: 'First scan that found it open.' }),
  },
  { additionalProperties: false },
);

/** A stored port as both routes answer it. */
const portJson = (p: StoredPort): Static<typeof PortSchema> => ({
  port: p.port,
  protocol: p.protocol,
  service: p.service,
  product: p.product,
  version: p.version,
  firstSeen: p.firstSeen,
});

const scannedAtSchema = Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
  description: 'When the port watch last scanned the device; null: never.',
});

const PortsSchema = Type.Object(
  { success: Type.Literal(true), scannedAt: scannedAtSchema, ports: Type.Array(PortSchema) },
  { additionalProperties: false },
);
type PortsJson = Static<typeof PortsSchema>;

/** Longer than any IPv6 text (45 characters) or MAC form. */
const maxTargetLength = 64;

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
      if (!(await opts.store.deviceExists(mac))) throw notFound(mac);
      const { scannedAt, ports } = await opts.store.ports(mac);
      return { success: true, scannedAt, ports: ports.map(portJson) };
    },
  );

  // NetAlertX: api_device_open_ports (server/api_server/api_server_start.py), OpenPortsRequest and
  // OpenPortsResponse (server/api_server/openapi/schemas.py), DeviceInstance.getOpenPorts
  // (server/models/device_instance.py): {success, target, open_ports: [{port, service}]}; 404 when
  // nothing is stored for the target. netkeep's port items carry the fields of GET
  // /device/<mac>/ports, and the answer names the device and its scan time.
  app.post(
    '/device/open_ports',
    {
      schema: {
        tags: ['netalertx'],
        summary:
          'Open ports of the device at an IP address or with a MAC (`target`), as the port watch last stored them: {success, target, mac, scannedAt, open_ports}. 404 when there is no such device or no stored open port.',
        body: Type.Object(
          {
            target: Type.String({
              minLength: 1,
              maxLength: maxTargetLength,
              pattern: ipOrMacPattern,
              description: "The device's IP address (devLastIP, or its IPv6 address) or its MAC in any form.",
            }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object(
            {
              success: Type.Literal(true),
              target: Type.String({ description: 'The target as sent.' }),
              mac: Type.String({ description: 'The device it named.' }),
              scannedAt: scannedAtSchema,
              open_ports: Type.Array(PortSchema),
            },
            { additionalProperties: false },
          ),
          ...commonErrors,
          404: ErrorRef,
        },
      },
    },
    async (request) => {
      const { target } = request.body;
      const { mac, scannedAt, ports } = await openPortsOf(opts.store, target);
      return { success: true as const, target, mac, scannedAt, open_ports: ports.map(portJson) };
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
