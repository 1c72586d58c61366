/**
 * The one validation module for network identifiers: MAC addresses, IP literals, hostnames and
 * CIDR ranges. Every check is ASCII-only (so Unicode digits, full-width characters and look-alikes
 * fail) and anchored, and no accepted value can start with `-`, so none can be read as an option.
 */
import ipaddr from 'ipaddr.js';

/*
 * The regular expressions below are exported as source text so that the route schemas (and so the
 * published OpenAPI document) carry exactly the rules these functions apply.
 */

/** Every accepted MAC form: `aa:bb:cc:dd:ee:ff`, `aa-bb-cc-dd-ee-ff` (any case), `aabb.ccdd.eeff`, `aabbccddeeff`. */
export const macPattern =
  '^(?:[0-9a-fA-F]{2}([:-])(?:[0-9a-fA-F]{2}\\1){4}[0-9a-fA-F]{2}|[0-9a-fA-F]{4}\\.[0-9a-fA-F]{4}\\.[0-9a-fA-F]{4}|[0-9a-fA-F]{12})$';
const macForm = new RegExp(macPattern);
const canonicalMac = /^[0-9a-f]{2}(?::[0-9a-f]{2}){5}$/;

/** A whole number as query text, digits only: `1e3`, `-1`, ` 5` and `0x10` are not. */
export const integerTextPattern = '^[0-9]{1,10}$';

/**
 * Canonical MAC (`aa:bb:cc:dd:ee:ff`) of `aa:bb:cc:dd:ee:ff`, `aa-bb-cc-dd-ee-ff` (any case),
 * `aabb.ccdd.eeff` or `aabbccddeeff`; null when the text is none of them.
 */
export function normalizeMac(input: string): string | null {
  // Most MACs arrive in canonical form already (links from the API's own answers): no copies then.
  if (canonicalMac.test(input)) return input;
  if (!macForm.test(input)) return null;
  return input.replace(/[:.-]/g, '').toLowerCase().match(/../g)?.join(':') ?? null;
}

/** The 6 bytes of a canonical MAC. */
/**
 * Whether a canonical MAC is locally administered (bit 0x02 of the first octet): a "private" or
 * random MAC as phones and laptops use per network, not one assigned by the maker.
 */
export function isRandomMac(canonicalMac: string): boolean {
  return (Number.parseInt(canonicalMac.slice(0, 2), 16) & 0x02) !== 0;
}

export function macBytes(canonicalMac: string): Buffer {
  return Buffer.from(canonicalMac.replace(/:/g, ''), 'hex');
}

export type IpVersion = 4 | 6;

/** Dotted-quad IPv4 without leading zeros. */
export const ipv4Pattern =
  '^(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$';
const ipv4Strict = new RegExp(ipv4Pattern);
/** The characters of an IP address literal (either version); ipVersion checks the rest. */
export const ipLiteralPattern = '^[0-9a-fA-F:.]+$';
const ipv6Chars = new RegExp(ipLiteralPattern);
/** The characters of an nmap target: an IP literal, optionally `/prefix`. */
export const scanTargetPattern = '^[0-9a-fA-F:.]+(?:/[0-9]{1,3})?$';
const scanTargetChars = new RegExp(scanTargetPattern);
/**
 * The characters of an IP literal or a MAC in any accepted form (NetAlertX's open_ports `target`),
 * never starting with `-`; parseIpOrMac checks the rest.
 */
export const ipOrMacPattern = '^[0-9a-fA-F:][0-9a-fA-F:.-]*$';
/** The characters of an IP literal or a hostname, never starting with `-`. */
export const hostOrIpPattern = '^[0-9A-Za-z.:][0-9A-Za-z.:-]*$';

/**
 * The version of an IP address literal, or null. IPv4 must be dotted-quad with no leading zeros;
 * IPv6 any RFC 4291 text form without a zone id, except IPv4-mapped addresses (`::ffff:a.b.c.d`,
 * `::ffff:7f00:1`): the tools handle them inconsistently (traceroute refuses them, nmap scans the
 * IPv4 host), so the IPv4 address must be given instead (see `mappedIpv4Hint`).
 */
export function ipVersion(input: string): IpVersion | null {
  if (ipv4Strict.test(input)) return 4;
  if (input.includes(':') && ipv6Chars.test(input) && ipaddr.IPv6.isValid(input)) {
    // ipaddr accepts an embedded IPv4 with leading zeros; check that part too.
    const tail = /:(\d+\.\d+\.\d+\.\d+)$/.exec(input)?.[1];
    if (tail !== undefined && !ipv4Strict.test(tail)) return null;
    if (ipaddr.IPv6.parse(input).isIPv4MappedAddress()) return null;
    return 6;
  }
  return null;
}

/**
 * For an error message: when `input` (an address, or a range `address/prefix`) is an IPv4-mapped
 * IPv6 address, a sentence saying so and naming the IPv4 address to give instead; else ''.
 */
export function mappedIpv4Hint(input: string): string {
  const address = input.split('/', 1)[0] ?? '';
  if (!address.includes(':') || !ipv6Chars.test(address) || !ipaddr.IPv6.isValid(address)) return '';
  const parsed = ipaddr.IPv6.parse(address);
  if (!parsed.isIPv4MappedAddress()) return '';
  return ` IPv4-mapped IPv6 addresses are not accepted: give the IPv4 address (${parsed.toIPv4Address().toString()}) instead.`;
}

/**
 * RFC 1123 hostname: dot-separated labels of letters, digits and inner hyphens, <= 253 chars. The
 * last label may not be all digits (RFC 1123 2.1): otherwise `010.1.1.1` would pass as a name and
 * reach a resolver that reads it as an octal address.
 */
export function isHostname(input: string): boolean {
  if (input.length === 0 || input.length > 253) return false;
  const name = input.endsWith('.') ? input.slice(0, -1) : input;
  const labels = name.split('.');
  if (/^[0-9]+$/.test(labels[labels.length - 1] ?? '')) return false;
  return labels.every((label) => /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(label));
}

/** An IP literal with an optional port. */
export interface IpPort {
  readonly host: string;
  readonly port: number | undefined;
}

/**
 * `ip`, `ipv4:port` or `[ipv6]:port` (also a bare IPv6 literal), as DNS_SERVER takes it; null when
 * the text is none of them.
 */
export function parseIpPort(value: string): IpPort | null {
  let host = value;
  let portText: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::([0-9]+))?$/.exec(value);
  if (bracketed?.[1] !== undefined) {
    host = bracketed[1];
    portText = bracketed[2];
  } else if (/^[^:]+:[0-9]+$/.test(value)) {
    [host = '', portText] = value.split(':');
  }
  if (ipVersion(host) === null) return null;
  if (portText === undefined) return { host, port: undefined };
  if (!/^[1-9][0-9]{0,4}$/.test(portText) || Number(portText) > 65535) return null;
  return { host, port: Number(portText) };
}

export interface ScanTarget {
  /** The target as nmap gets it: an address or address/prefix. */
  readonly target: string;
  readonly version: IpVersion;
  /** Number of addresses covered. */
  readonly size: number;
}

/**
 * An nmap target: one IP literal or a CIDR range `address/prefix`. Returns null when the text is
 * neither; `size` lets the caller enforce NMAP_MAX_HOSTS.
 */
export function parseScanTarget(input: string): ScanTarget | null {
  if (!scanTargetChars.test(input)) return null;
  const [address, prefixText, ...rest] = input.split('/');
  if (address === undefined || rest.length > 0) return null;
  const version = ipVersion(address);
  if (version === null) return null;
  if (prefixText === undefined) return { target: address, version, size: 1 };
  if (!/^(?:0|[1-9][0-9]{0,2})$/.test(prefixText)) return null;
  const prefix = Number(prefixText);
  const bits = version === 4 ? 32 : 128;
  if (prefix > bits) return null;
  return { target: `${address}/${prefix}`, version, size: 2 ** (bits - prefix) };
}

/** An IP address (RFC 5952 text for IPv6) or a canonical MAC; null when the text is neither. */
export function parseIpOrMac(input: string): { ip: string } | { mac: string } | null {
  const mac = normalizeMac(input);
  if (mac !== null) return { mac };
  const version = ipVersion(input);
  if (version === 4) return { ip: input };
  if (version === 6) return { ip: ipaddr.IPv6.parse(input).toString() };
  return null;
}
