/**
 * Subnet discovery: which (MAC, IP, vendor) answer on one subnet, found with `arp-scan` or, as the
 * fallback, `nmap -sn`. This module never spawns a process: it builds argument arrays from
 * validated values and hands them to an injected RunTool (in production the shared tool runner),
 * and it parses the output with pure functions that the tests feed with captured real output.
 */
import { parseNmapXml } from '../nettools/nmap-xml.js';
import { tail } from '../nettools/runner.js';
import { ipVersion, normalizeMac } from '../validation.js';
import type { Ipv6Neighbour } from './ipv6.js';
import type { ScanSubnet } from './subnets.js';

export type ScanToolName = 'arp-scan' | 'nmap';
/** Every command discovery runs: the scan tool, and for IPv6 neighbours ping and ip (ipv6.ts). */
export type DiscoveryCommand = ScanToolName | 'ping' | 'ip';
/** What found a device first (a new device's devSourcePlugin): the scan tool, or the IPv6 neighbour table. */
export type SightingSource = ScanToolName | 'ipv6-neighbours';

export interface ToolResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
}

/**
 * Runs one OS tool without a shell. Rejects when the tool cannot run (not installed: an error with
 * `statusCode` 503; timed out: 504; aborted) and resolves with the exit code otherwise.
 */
export type RunTool = (
  tool: DiscoveryCommand,
  args: readonly string[],
  options: { timeoutMs: number; signal?: AbortSignal },
) => Promise<ToolResult>;

/** One answer from one address: a MAC may answer for several addresses. */
export interface Sighting {
  /** Canonical MAC, `aa:bb:cc:dd:ee:ff`. */
  readonly mac: string;
  readonly ip: string;
  /** Vendor from the tool's OUI data; '' when unknown. */
  readonly vendor: string;
}

/** A subnet's discovery failed: the whole cycle fails and changes nothing. */
export class DiscoveryError extends Error {
  override name = 'DiscoveryError';

  constructor(
    readonly subnet: string,
    readonly tool: ScanToolName,
    message: string,
    /** The tail of the tool's stderr, when it ran. */
    readonly details?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Attempts per address: one lost ARP reply must not make a present device look absent. */
const arpScanRetries = 3;

/** arp-scan's fields separated by tabs; a vendor string never holds a tab. */
const arpScanFormat = '--format=${ip}\\t${mac}\\t${vendor}';

export function arpScanArgs(subnet: ScanSubnet): string[] {
  return [
    `--interface=${subnet.iface}`,
    `--retry=${arpScanRetries}`,
    '--plain',
    // Duplicate answers are kept: two MACs answering for one address is an IP Conflict (the
    // security watch); a MAC answering twice is merged by mergeSightings.
    '--numeric',
    arpScanFormat,
    subnet.cidr,
  ];
}

export function nmapPingScanArgs(subnet: ScanSubnet): string[] {
  return ['-sn', '-n', '-e', subnet.iface, '-oX', '-', subnet.cidr];
}

/** arp-scan's placeholders for an OUI it does not know: not a vendor name. */
function cleanVendor(vendor: string): string {
  const trimmed = vendor.trim();
  return trimmed.startsWith('(Unknown') ? '' : trimmed;
}

/**
 * Parses `arp-scan --plain --format='${ip}\t${mac}\t${vendor}'` output. Lines that are not a valid
 * IPv4 address and MAC are skipped (they cannot be acted upon).
 */
export function parseArpScan(stdout: string): Sighting[] {
  const sightings: Sighting[] = [];
  for (const line of stdout.split('\n')) {
    const [ip = '', macText = '', ...vendorParts] = line.replace(/\r$/, '').split('\t');
    const mac = normalizeMac(macText.trim());
    if (mac === null || ipVersion(ip.trim()) !== 4) continue;
    sightings.push({ mac, ip: ip.trim(), vendor: cleanVendor(vendorParts.join(' ')) });
  }
  return sightings;
}

/**
 * Parses `nmap -sn -oX -` output: up hosts with an IPv4 address and a MAC (as root on the local
 * segment nmap reports both, with the vendor from its OUI data). Hosts without a MAC (the
 * scanning host itself) are skipped. Throws on output that is not an nmap run, that reports an
 * error, or that skipped targets: nmap skips (and exits 0) every address it finds no route to,
 * e.g. all of them when the interface is down, and "no hosts" from addresses never probed would
 * mark their devices as gone.
 */
export function parseNmapPingScan(xml: string): Sighting[] {
  const report = parseNmapXml(xml);
  if (report.error !== null) throw new Error(report.error);
  const [first] = report.skipped;
  if (first) {
    throw new Error(
      `nmap skipped ${report.skipped.length} target(s), e.g. ${first.specification} ` +
        `(${first.reason}: no route from the interface; is it down?)`,
    );
  }
  const sightings: Sighting[] = [];
  for (const host of report.hosts) {
    const mac = normalizeMac(host.mac ?? '');
    if (host.state !== 'up' || host.address === null || ipVersion(host.address) !== 4 || mac === null)
      continue;
    sightings.push({ mac, ip: host.address, vendor: cleanVendor(host.vendor ?? '') });
  }
  return sightings;
}

export interface DiscoverOptions {
  readonly runTool: RunTool;
  readonly tool: ScanToolName;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/**
 * Runs one subnet's discovery. Throws DiscoveryError when the tool cannot run, exits non-zero
 * (e.g. the interface does not exist) or prints output that cannot be parsed.
 */
export async function discoverSubnet(subnet: ScanSubnet, options: DiscoverOptions): Promise<Sighting[]> {
  const { tool } = options;
  const args = tool === 'arp-scan' ? arpScanArgs(subnet) : nmapPingScanArgs(subnet);
  let result: ToolResult;
  try {
    result = await options.runTool(tool, args, { timeoutMs: options.timeoutMs, signal: options.signal });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new DiscoveryError(
      subnet.label,
      tool,
      `${tool} on ${subnet.label} could not run: ${reason}`,
      undefined,
      {
        cause: err,
      },
    );
  }
  if (result.exitCode !== 0) {
    const details = tail(result.stderr, 1000).trimStart();
    throw new DiscoveryError(
      subnet.label,
      tool,
      `${tool} on ${subnet.label} failed with exit code ${result.exitCode}${details ? `: ${details.split('\n')[0] ?? ''}` : ''}`,
      details,
    );
  }
  try {
    return tool === 'arp-scan' ? parseArpScan(result.stdout) : parseNmapPingScan(result.stdout);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new DiscoveryError(
      subnet.label,
      tool,
      `${tool} on ${subnet.label}: ${reason}`,
      tail(result.stderr, 1000),
    );
  }
}

/** What one cycle saw of one MAC, over every subnet. */
export interface Observation {
  /** Every IPv4 address the MAC answered for, unique, in numeric order (empty: IPv6 only). */
  readonly ips: readonly string[];
  /** Its IPv6 addresses from the neighbour tables, unique, sorted; absent or empty when none. */
  readonly ipv6?: readonly string[];
  /** The first non-empty vendor, in SCAN_SUBNETS order; '' when none. */
  readonly vendor: string;
  /** What saw it first (recorded as a new device's devSourcePlugin). */
  readonly source: SightingSource;
}

function ipv4Number(ip: string): number {
  return ip.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
}

/** IPv4 addresses, unique, in numeric order (the order of Observation.ips). */
export function sortedIps(ips: Iterable<string>): string[] {
  return [...new Set(ips)].sort((a, b) => ipv4Number(a) - ipv4Number(b));
}

export interface SubnetResult {
  readonly tool: ScanToolName;
  readonly sightings: readonly Sighting[];
  /** The MACs that answered on the subnet's interface over IPv6 (SCAN_IPV6), with their addresses. */
  readonly neighbours?: readonly Ipv6Neighbour[];
}

/**
 * Merges every subnet's sightings into one observation per MAC (a MAC seen twice, on one subnet
 * or on two, is one device). Results must be given in SCAN_SUBNETS order: that order decides the
 * vendor and source recorded, so the outcome is deterministic.
 */
export function mergeSightings(results: readonly SubnetResult[]): Map<string, Observation> {
  const merged = new Map<
    string,
    { ips: Set<string>; ipv6: Set<string>; vendor: string; source: SightingSource }
  >();
  const entryOf = (mac: string, source: SightingSource) => {
    let entry = merged.get(mac);
    if (entry === undefined) {
      entry = { ips: new Set(), ipv6: new Set(), vendor: '', source };
      merged.set(mac, entry);
    }
    return entry;
  };
  // IPv4 first, over every subnet: a MAC seen by the scan tool anywhere has that tool as source.
  for (const result of results) {
    for (const sighting of result.sightings) {
      const entry = entryOf(sighting.mac, result.tool);
      entry.ips.add(sighting.ip);
      if (entry.vendor === '') entry.vendor = sighting.vendor;
    }
  }
  for (const result of results)
    for (const neighbour of result.neighbours ?? []) {
      const entry = entryOf(neighbour.mac, 'ipv6-neighbours');
      for (const address of neighbour.addresses) entry.ipv6.add(address);
    }
  const observations = new Map<string, Observation>();
  for (const [mac, entry] of merged) {
    const ips = sortedIps(entry.ips);
    const observation: Observation = { ips, vendor: entry.vendor, source: entry.source };
    observations.set(
      mac,
      entry.ipv6.size === 0 ? observation : { ...observation, ipv6: [...entry.ipv6].sort() },
    );
  }
  return observations;
}
