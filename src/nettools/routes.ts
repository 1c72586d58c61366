/**
 * HTTP routes of the network tools (NetAlertX's /nettools paths). Thin: the body schema checks types
 * (strict strings, 400 naming the field), the tool module validates values and runs, the route
 * returns its result. Command-running routes pass an AbortSignal that fires when the client
 * disconnects, so the command is stopped. traceroute, nmap and the speed test also answer as an
 * event stream (progress, then the same result) to a client that accepts `text/event-stream`;
 * the input is validated first, so a bad request is still the plain JSON 400.
 */
import { Type } from '@sinclair/typebox';
import type { Config } from '../config.js';
import type { App } from '../http/app.js';
import { toolRoute } from '../http/auth.js';
import { stringEnum } from '../enum-schema.js';
import { commonErrors, ErrorRef } from '../http/schemas.js';
import { eventStreamRoute, streamWork, wantsEventStream, type EventStreamOptions } from '../http/sse.js';
import {
  hostOrIpPattern,
  ipLiteralPattern,
  ipv4Pattern,
  macPattern,
  scanTargetPattern,
} from '../validation.js';
import { hostInterfaces, InterfaceSchema } from './interfaces.js';
import { internetInfo } from './internetinfo.js';
import { NmapHostSchema } from './nmap-xml.js';
import { nmap, nmapArgs, nmapModes, type NmapOptions } from './nmap.js';
import { nslookup } from './nslookup.js';
import { rawSocketAccess } from './privileges.js';
import { disconnectSignal, type ToolRunner } from './runner.js';
import { Speedtest } from './speedtest.js';
import { traceroute, tracerouteArgs } from './traceroute.js';
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

/** Said in the description of each route that can stream. */
const streamNote =
  ' With `Accept: text/event-stream`: 200 event stream of `progress` messages, then one `result` (this body) or `error` (the error body plus `status`).';

const strictString = (description: string, pattern?: string) =>
  Type.String({ description, maxLength: 1024, ...(pattern === undefined ? {} : { pattern }) });

const OutputLines = Type.Array(Type.String(), { description: 'One element per output line.' });

/** The network tool routes, as an encapsulated Fastify plugin (register it with `app.register`). */
export default async function nettoolsRoutes(
  app: App,
  { config, runner }: NettoolsRoutesOptions,
): Promise<void> {
  const nmapRawSockets = rawSocketAccess(
    runner.isInstalled('nmap') ? runner.binary('nmap') : undefined,
    config.TOOL_PATH,
  );
  const speedtest = new Speedtest(runner, {
    backend: config.SPEEDTEST_BACKEND,
    serverUrl: config.SPEEDTEST_SERVER_URL,
    streams: config.SPEEDTEST_STREAMS,
    durationMs: config.SPEEDTEST_DURATION_MS,
    timeoutMs: config.SPEEDTEST_TIMEOUT_MS,
  });
  const streams: EventStreamOptions = { keepAliveMs: config.SSE_KEEPALIVE_MS };

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
      config: eventStreamRoute,
      schema: {
        tags,
        summary: 'Trace the route to an IP address',
        description:
          'Runs traceroute -n (-6 for IPv6) with TRACEROUTE_MAX_HOPS hops; output is its stdout. Progress: {"line"} per output line.' +
          streamNote,
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
    async (request, reply) => {
      const address = request.body.devLastIP;
      const options = { maxHops: config.TRACEROUTE_MAX_HOPS, timeoutMs: config.TRACEROUTE_TIMEOUT_MS };
      if (!wantsEventStream(request))
        return traceroute(runner, address, options, disconnectSignal(reply.raw));
      tracerouteArgs(address, options.maxHops); // a bad address is the plain 400, before the stream opens
      return streamWork(request, reply, streams, (progress, signal) =>
        traceroute(
          runner,
          address,
          {
            ...options,
            onLine: (line) => {
              progress({ line });
            },
          },
          signal,
        ),
      );
    },
  );

  app.get(
    '/nettools/speedtest',
    {
      config: { ...eventStreamRoute, ...toolRoute },
      schema: {
        tags,
        summary: 'Measure internet ping, download and upload',
        description:
          'SPEEDTEST_BACKEND: speedtest-cli (--secure) or the builtin HTTP test. One test at a time; concurrent requests share its result and its progress: {"phase": "latency", "pingMs"}, then {"phase": "download"|"upload", "mbps"} as each phase ends.' +
          streamNote,
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
    async (request, reply) => {
      if (!wantsEventStream(request)) return speedtest.run();
      return streamWork(request, reply, streams, (progress) => speedtest.run(progress));
    },
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
      config: eventStreamRoute,
      schema: {
        tags,
        summary: 'Port-scan an address or a CIDR range',
        description:
          'Modes: fast (-F), normal (no flags), detail (-A, needs root), skipdiscovery (-Pn). At most NMAP_MAX_HOSTS addresses. Progress: {"line"} per output line, with nmap\'s own progress lines (--stats-every), which the result\'s output leaves out.' +
          streamNote,
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
    async (request, reply) => {
      const { scan, mode } = request.body;
      const options: NmapOptions = {
        maxHosts: config.NMAP_MAX_HOSTS,
        timeoutMs: config.NMAP_TIMEOUT_MS,
        dnsServer: config.DNS_SERVER,
        rawSockets: nmapRawSockets,
      };
      if (!wantsEventStream(request)) return nmap(runner, scan, mode, options, disconnectSignal(reply.raw));
      nmapArgs(scan, mode, options); // a bad target or mode is the plain 400, before the stream opens
      return streamWork(request, reply, streams, (progress, signal) =>
        nmap(
          runner,
          scan,
          mode,
          {
            ...options,
            onLine: (line) => {
              progress({ line });
            },
          },
          signal,
        ),
      );
    },
  );

  app.get(
    '/nettools/internetinfo',
    {
      config: toolRoute,
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

  app.get(
    '/nettools/interfaces',
    {
      schema: {
        tags,
        summary:
          "The host's network interfaces and their addresses (read-only): {success, interfaces: {name: {...}}}.",
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            interfaces: Type.Record(Type.String(), InterfaceSchema),
          }),
          403: ErrorRef,
        },
      },
    },
    async () => ({ success: true as const, interfaces: hostInterfaces() }),
  );
}
