/**
 * HTTP routes of the network tools (NetAlertX's /nettools paths). Thin: the body schema checks types
 * (strict strings, 400 naming the field), the tool module validates values and runs, the route
 * returns its result. Command-running routes pass an AbortSignal that fires when the client
 * disconnects, so the command is stopped.
 */
import { Type } from '@sinclair/typebox';
import type { Config } from '../config.js';
import type { App } from '../http/app.js';
import { stringEnum } from '../enum-schema.js';
import { commonErrors, ErrorRef } from '../http/schemas.js';
import {
  hostOrIpPattern,
  ipLiteralPattern,
  ipv4Pattern,
  macPattern,
  scanTargetPattern,
} from '../validation.js';
import { internetInfo } from './internetinfo.js';
import { NmapHostSchema } from './nmap-xml.js';
import { nmap, nmapModes } from './nmap.js';
import { nslookup } from './nslookup.js';
import { disconnectSignal, type ToolRunner } from './runner.js';
import { Speedtest } from './speedtest.js';
import { traceroute } from './traceroute.js';
import { wakeOnLan } from './wakeonlan.js';

export interface NettoolsRoutesOptions {
  /** The tools' settings (limits, DNS_SERVER, Wake-on-LAN defaults, speed-test backend). */
  readonly config: Config;
  /** The one runner every command goes through. */
  readonly runner: ToolRunner;
}

const tags = ['nettools'];
/** Statuses a command-running route can answer besides 200 and the common ones. */
const commandErrors = {
  ...commonErrors,
  429: ErrorRef,
  500: ErrorRef,
  503: ErrorRef,
  504: ErrorRef,
} as const;

const strictString = (description: string, pattern?: string) =>
  Type.String({ description, maxLength: 1024, ...(pattern === undefined ? {} : { pattern }) });

const OutputLines = Type.Array(Type.String(), { description: 'One element per output line.' });

/** The network tool routes, as an encapsulated Fastify plugin (register it with `app.register`). */
export default async function nettoolsRoutes(
  app: App,
  { config, runner }: NettoolsRoutesOptions,
): Promise<void> {
  const speedtest = new Speedtest(runner, {
    backend: config.SPEEDTEST_BACKEND,
    serverUrl: config.SPEEDTEST_SERVER_URL,
    streams: config.SPEEDTEST_STREAMS,
    durationMs: config.SPEEDTEST_DURATION_MS,
    timeoutMs: config.SPEEDTEST_TIMEOUT_MS,
  });

  app.post(
    '/nettools/wakeonlan',
    {
      schema: {
        tags,
        summary: 'Send a Wake-on-LAN magic packet',
        description:
          'Sends the 102-byte magic packet for devMac 3 times over UDP broadcast to WOL_BROADCAST:WOL_PORT, or to the given broadcast and port.',
        body: Type.Object(
          {
            devMac: strictString(
              'MAC: aa:bb:cc:dd:ee:ff, aa-bb-cc-dd-ee-ff, aabb.ccdd.eeff or aabbccddeeff.',
              macPattern,
            ),
            broadcast: Type.Optional(
              strictString('IPv4 broadcast address; default WOL_BROADCAST.', ipv4Pattern),
            ),
            port: Type.Optional(
              Type.Integer({ minimum: 1, maximum: 65535, description: 'UDP port; default WOL_PORT.' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ success: Type.Literal(true), message: Type.String(), output: Type.String() }),
          ...commonErrors,
          500: ErrorRef,
        },
      },
    },
    async (request) => wakeOnLan(request.body, { broadcast: config.WOL_BROADCAST, port: config.WOL_PORT }),
  );

  app.post(
    '/nettools/traceroute',
    {
      schema: {
        tags,
        summary: 'Trace the route to an IP address',
        description: 'Runs traceroute -n (-6 for IPv6) with TRACEROUTE_MAX_HOPS hops; output is its stdout.',
        body: Type.Object(
          {
            devLastIP: strictString(
              'One IPv4 or IPv6 address literal (no IPv4-mapped IPv6, no leading zeros).',
              ipLiteralPattern,
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ success: Type.Literal(true), output: Type.String() }),
          ...commandErrors,
        },
      },
    },
    async (request, reply) =>
      traceroute(
        runner,
        request.body.devLastIP,
        { maxHops: config.TRACEROUTE_MAX_HOPS, timeoutMs: config.TRACEROUTE_TIMEOUT_MS },
        disconnectSignal(reply.raw),
      ),
  );

  app.get(
    '/nettools/speedtest',
    {
      schema: {
        tags,
        summary: 'Measure internet ping, download and upload',
        description:
          'SPEEDTEST_BACKEND: speedtest-cli (--secure --simple) or the builtin HTTP test. One test at a time; concurrent requests share its result.',
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            output: OutputLines,
            result: Type.Object({
              pingMs: Type.Number(),
              downloadMbps: Type.Number(),
              uploadMbps: Type.Number(),
            }),
          }),
          403: ErrorRef,
          429: ErrorRef,
          500: ErrorRef,
          503: ErrorRef,
          504: ErrorRef,
        },
      },
    },
    async () => speedtest.run(),
  );

  app.post(
    '/nettools/nslookup',
    {
      schema: {
        tags,
        summary: 'Look up a hostname or an IP address',
        description: 'Runs nslookup against DNS_SERVER (or the system resolver). NXDOMAIN is a result (200).',
        body: Type.Object(
          {
            devLastIP: Type.String({
              description: 'An IP address or an RFC 1123 hostname.',
              maxLength: 253,
              pattern: hostOrIpPattern,
            }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ success: Type.Literal(true), output: OutputLines }),
          ...commandErrors,
        },
      },
    },
    async (request, reply) =>
      nslookup(
        runner,
        request.body.devLastIP,
        { server: config.DNS_SERVER, timeoutMs: config.NSLOOKUP_TIMEOUT_MS },
        disconnectSignal(reply.raw),
      ),
  );

  app.post(
    '/nettools/nmap',
    {
      schema: {
        tags,
        summary: 'Port-scan an address or a CIDR range',
        description:
          'Modes: fast (-F), normal (no flags), detail (-A, needs root), skipdiscovery (-Pn). At most NMAP_MAX_HOSTS addresses.',
        body: Type.Object(
          {
            scan: strictString(
              'IPv4/IPv6 address or CIDR range, at most NMAP_MAX_HOSTS addresses.',
              scanTargetPattern,
            ),
            mode: stringEnum(Object.keys(nmapModes), 'fast, normal, detail or skipdiscovery.'),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            mode: Type.String(),
            ip: Type.String(),
            output: OutputLines,
            hosts: Type.Array(NmapHostSchema),
          }),
          ...commandErrors,
        },
      },
    },
    async (request, reply) =>
      nmap(
        runner,
        request.body.scan,
        request.body.mode,
        {
          maxHosts: config.NMAP_MAX_HOSTS,
          timeoutMs: config.NMAP_TIMEOUT_MS,
          dnsServer: config.DNS_SERVER,
          uid: process.getuid?.(),
        },
        disconnectSignal(reply.raw),
      ),
  );

  app.get(
    '/nettools/internetinfo',
    {
      schema: {
        tags,
        summary: 'Public IP, city, country and organisation of the internet connection',
        description: 'GET of INTERNETINFO_URL (ipinfo.io JSON shape) with INTERNETINFO_TIMEOUT_MS.',
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            output: Type.String(),
            info: Type.Record(Type.String(), Type.Unknown()),
          }),
          403: ErrorRef,
          500: ErrorRef,
        },
      },
    },
    async (_request, reply) =>
      internetInfo(
        { url: config.INTERNETINFO_URL, timeoutMs: config.INTERNETINFO_TIMEOUT_MS },
        disconnectSignal(reply.raw),
      ),
  );
}
