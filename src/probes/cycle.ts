/**
 * A probe's uploaded cycle: its shape as the route's schema (TypeBox, bounded in every
 * dimension) and the domain's checks the schema cannot make: MACs through src/validation.ts,
 * subnets as IPv4 CIDR ranges, every IPv4 sighting inside one of them, IPv6 literals, times neither
 * far in the future nor far in the past. A cycle that breaks one is refused whole and changes
 * nothing.
 */
import { Type, type Static } from '@sinclair/typebox';
import { DomainError } from '../errors.js';
import type { SubnetResult } from '../scanner/discovery.js';
import { inSubnet, maxSubnetSize } from '../scanner/subnets.js';
import { ipVersion, normalizeMac, parseScanTarget } from '../validation.js';
import type { AutoSource } from '../names/types.js';

/** Sightings per cycle: a probe's subnets are /16 at most each, and a LAN rarely holds 10,000 devices. */
export const maxSightings = 10_000;
/** Subnets per cycle. */
export const maxSubnets = 64;
/** The body limit of POST /probes/cycles: 10,000 sightings of the longest allowed fields fit in it. */
export const cycleBodyLimit = 16 * 1024 * 1024;
/** How far ahead of the hub's clock a cycle may have finished (clocks drift). */
export const maxFutureMs = 5 * 60_000;
/** How old a cycle may be: a spool of PROBE_SPOOL_MAX cycles at SCAN_INTERVAL is days, never months. */
export const maxAgeMs = 30 * 86_400_000;

const uuidPattern = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

export const SightingSchema = Type.Object(
  {
    mac: Type.String({
      maxLength: 32,
      description: 'MAC address (checked like every MAC: 400 INVALID_MAC).',
    }),
    ip: Type.String({
      maxLength: 15,
      description: "IPv4 address inside one of the cycle's subnets; '' for IPv6 only.",
    }),
    ipv6: Type.Optional(Type.Array(Type.String({ maxLength: 45 }), { maxItems: 16 })),
    vendor: Type.Optional(Type.String({ maxLength: 256 })),
    name: Type.Optional(
      Type.String({ maxLength: 255, description: "The probe's name for the device; '' none." }),
    ),
    nameSource: Type.Optional(
      Type.Union([
        Type.Literal(''),
        Type.Literal('dhcp'),
        Type.Literal('mdns'),
        Type.Literal('netbios'),
        Type.Literal('dns'),
      ]),
    ),
    dhcpClientId: Type.Optional(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
);

export const CycleUploadSchema = Type.Object(
  {
    cycleId: Type.String({
      pattern: uuidPattern,
      description: 'UUID of the cycle: a repeat answers 200 and changes nothing.',
    }),
    probeId: Type.Optional(
      Type.String({ maxLength: 64, description: "The uploading probe's id; must be the token's." }),
    ),
    startedAt: Type.String({ format: 'date-time' }),
    finishedAt: Type.String({ format: 'date-time' }),
    tool: Type.Optional(Type.Union([Type.Literal('arp-scan'), Type.Literal('nmap')])),
    subnets: Type.Array(Type.String({ maxLength: 18 }), {
      maxItems: maxSubnets,
      description: 'IPv4 CIDR ranges scanned.',
    }),
    sightings: Type.Array(SightingSchema, { maxItems: maxSightings }),
    errors: Type.Optional(Type.Array(Type.String({ maxLength: 2000 }), { maxItems: 64 })),
    spooledCycles: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000 })),
    droppedCycles: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000 })),
  },
  { additionalProperties: false },
);
export type CycleUpload = Static<typeof CycleUploadSchema>;

/** A cycle as the hub applies it: checked, MACs canonical. */
export interface ProbeCycle {
  readonly cycleId: string;
  readonly startedAt: Date;
  readonly finishedAt: Date;
  readonly subnets: readonly string[];
  /** One discovery result, ready for mergeSightings. */
  readonly result: SubnetResult;
  /** Names the probe found, per canonical MAC. */
  readonly names: ReadonlyMap<string, { readonly name: string; readonly source: AutoSource }>;
  /** DHCP client identifiers the probe saw, per canonical MAC (linking of random MACs). */
  readonly clientIds: ReadonlyMap<string, string>;
  readonly errors: readonly string[];
  readonly spooledCycles: number;
  readonly droppedCycles: number;
}

const invalid = (code: string, message: string) => new DomainError('invalid', message, { code });

// eslint-disable-next-line no-control-regex
const controlChars = /[\u0000-\u001f\u007f]/;

function time(value: string, field: string): Date {
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw invalid('CYCLE_TIME_OUT_OF_RANGE', `${field} is not a date-time.`);
  return at;
}

/** Checks an upload against the rules above; throws DomainError `invalid` naming the first problem. */
export function checkCycle(upload: CycleUpload, now: Date): ProbeCycle {
  const startedAt = time(upload.startedAt, 'startedAt');
  const finishedAt = time(upload.finishedAt, 'finishedAt');
  if (finishedAt.getTime() < startedAt.getTime())
    throw invalid('CYCLE_TIME_OUT_OF_RANGE', 'finishedAt is before startedAt.');
  if (finishedAt.getTime() > now.getTime() + maxFutureMs)
    throw invalid(
      'CYCLE_TIME_OUT_OF_RANGE',
      "finishedAt is more than 5 minutes ahead of the hub's clock: check the probe's clock (NTP).",
    );
  if (startedAt.getTime() < now.getTime() - maxAgeMs)
    throw invalid(
      'CYCLE_TIME_OUT_OF_RANGE',
      'startedAt is more than 30 days ago: the cycle is too old to apply.',
    );
  const subnets = upload.subnets.map((text, index) => {
    const target = parseScanTarget(text);
    if (target === null || target.version !== 4 || !text.includes('/') || target.size > maxSubnetSize)
      throw invalid('INVALID_SUBNET', `subnets[${index}] is not an IPv4 CIDR range of at most a /16.`);
    return target.target;
  });
  const sightings = [];
  const neighbours = new Map<string, string[]>();
  const names = new Map<string, { name: string; source: AutoSource }>();
  const clientIds = new Map<string, string>();
  for (const [index, s] of upload.sightings.entries()) {
    const mac = normalizeMac(s.mac);
    if (mac === null) throw invalid('INVALID_MAC', `sightings[${index}].mac is not a MAC address.`);
    if (s.ip !== '') {
      if (ipVersion(s.ip) !== 4 || !subnets.some((cidr) => inSubnet(s.ip, cidr)))
        throw invalid(
          'INVALID_SIGHTING',
          `sightings[${index}].ip is not an IPv4 address inside one of the cycle's subnets.`,
        );
      sightings.push({ mac, ip: s.ip, vendor: s.vendor ?? '' });
    }
    for (const address of s.ipv6 ?? [])
      if (ipVersion(address) !== 6)
        throw invalid(
          'INVALID_SIGHTING',
          `sightings[${index}].ipv6 holds something that is not an IPv6 address.`,
        );
    if ((s.ipv6?.length ?? 0) > 0) neighbours.set(mac, [...(neighbours.get(mac) ?? []), ...(s.ipv6 ?? [])]);
    if (s.ip === '' && (s.ipv6?.length ?? 0) === 0)
      throw invalid('INVALID_SIGHTING', `sightings[${index}] has neither an IPv4 nor an IPv6 address.`);
    for (const text of [s.vendor, s.name, s.dhcpClientId])
      if (text !== undefined && controlChars.test(text))
        throw invalid('INVALID_SIGHTING', `sightings[${index}] holds control characters.`);
    const name = s.name?.trim() ?? '';
    if (name !== '' && s.nameSource !== undefined && s.nameSource !== '')
      names.set(mac, { name, source: s.nameSource });
    if (s.dhcpClientId !== undefined && s.dhcpClientId !== '') clientIds.set(mac, s.dhcpClientId);
  }
  return {
    cycleId: upload.cycleId.toLowerCase(),
    startedAt,
    finishedAt,
    subnets,
    result: {
      tool: upload.tool ?? 'arp-scan',
      sightings,
      neighbours: [...neighbours].map(([mac, addresses]) => ({ mac, addresses })),
    },
    names,
    clientIds,
    errors: upload.errors ?? [],
    spooledCycles: upload.spooledCycles ?? 0,
    droppedCycles: upload.droppedCycles ?? 0,
  };
}
