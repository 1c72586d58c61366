/**
 * SCAN_SUBNETS: the comma-separated `cidr@interface[@gateway]` list that turns presence scanning
 * on. Each entry becomes one discovery command per cycle, so both halves end up on a command line:
 * the range goes through the shared validator, the interface name through a strict allow-list. The
 * optional gateway (the security watch's, docs/security-watch.md) must be an IPv4 address inside the
 * range; without it the gateway is read from the kernel's routes.
 */
import { ConfigError } from '../config.js';
import { ipVersion, parseScanTarget } from '../validation.js';

export interface ScanSubnet {
  /** IPv4 range `address/prefix`, as validated (host bits are allowed: the tools accept them). */
  readonly cidr: string;
  /** Network interface the discovery is sent from. */
  readonly iface: string;
  /** Number of addresses the range covers. */
  readonly size: number;
  /** `cidr@iface`: how the entry is named in logs, errors and the cycle summary. */
  readonly label: string;
  /** The gateway given as the entry's third part; undefined: from the kernel's routes. */
  readonly gateway?: string;
}

function ipv4Number(ip: string): number {
  return ip.split('.').reduce((n, octet) => n * 256 + Number(octet), 0) >>> 0;
}

/** Whether an IPv4 address lies inside `address/prefix`. */
export function inSubnet(ip: string, cidr: string): boolean {
  const [base = '', prefixText = '32'] = cidr.split('/');
  const prefix = Number(prefixText);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return (ipv4Number(ip) & mask) >>> 0 === (ipv4Number(base) & mask) >>> 0;
}

/**
 * Linux interface names: at most 15 characters (IFNAMSIZ - 1). Only the characters real names use,
 * and never a leading `-`, so the name cannot be read as an option by arp-scan or nmap.
 */
const interfaceName = /^[A-Za-z0-9_.:-]{1,15}$/;

/**
 * The largest range one entry may cover (a /16). arp-scan sends one request per address, so a
 * larger range would make every cycle take minutes and flood the LAN.
 */
export const maxSubnetSize = 65_536;

/** Parses SCAN_SUBNETS. Empty or blank text: no subnets (scanning off). Throws ConfigError. */
export function parseScanSubnets(raw: string): ScanSubnet[] {
  if (raw.trim() === '') return [];
  const seen = new Set<string>();
  return raw.split(',').map((entryText, index) => {
    const entry = entryText.trim();
    const where = `SCAN_SUBNETS entry ${index + 1} ('${entry}')`;
    if (entry === '') throw new ConfigError(`SCAN_SUBNETS entry ${index + 1} is empty`);
    const parts = entry.split('@');
    if (parts.length !== 2 && parts.length !== 3)
      throw new ConfigError(
        `${where} must be cidr@interface or cidr@interface@gateway, e.g. 192.168.1.0/24@eth0@192.168.1.1`,
      );
    const [range = '', iface = '', gateway] = parts;
    if (!range.includes('/'))
      throw new ConfigError(`${where}: '${range}' must be an IPv4 range with a prefix, e.g. 192.168.1.0/24`);
    const target = parseScanTarget(range);
    if (target?.version !== 4)
      throw new ConfigError(`${where}: '${range}' is not an IPv4 CIDR range such as 192.168.1.0/24`);
    if (target.size > maxSubnetSize)
      throw new ConfigError(`${where}: '${range}' covers ${target.size} addresses; at most a /16 is allowed`);
    if (!interfaceName.test(iface) || iface.startsWith('-') || iface === '.' || iface === '..')
      throw new ConfigError(
        `${where}: '${iface}' is not an interface name (1-15 of A-Z a-z 0-9 _ . : -, not starting with -, not . or ..)`,
      );
    const label = `${target.target}@${iface}`;
    if (seen.has(label)) throw new ConfigError(`${where} is listed twice`);
    seen.add(label);
    if (gateway === undefined) return { cidr: target.target, iface, size: target.size, label };
    // The strict dotted form (no leading zeros): the address is compared with what discovery reports.
    if (ipVersion(gateway) !== 4)
      throw new ConfigError(`${where}: the gateway (third part) must be an IPv4 address such as 192.168.1.1`);
    if (!inSubnet(gateway, target.target))
      throw new ConfigError(`${where}: the gateway ${gateway} is not inside ${target.target}`);
    return { cidr: target.target, iface, size: target.size, label, gateway };
  });
}

function ipv4ToNumber(ip: string): number | null {
  const parts = ip.split('.');
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    if (!/^[0-9]{1,3}$/.test(part) || Number(part) > 255) return null;
    value = value * 256 + Number(part);
  }
  return value;
}

/**
 * The scope of a cycle: whether an address lies inside one of its subnets. A cycle
 * judges only the devices it could have seen; an address that is empty or not IPv4 is outside.
 */
export function subnetScope(subnets: readonly ScanSubnet[]): (ip: string) => boolean {
  const ranges = subnets.map((subnet) => {
    const [address = '', prefixText = '32'] = subnet.cidr.split('/');
    const prefix = Number(prefixText);
    // 2^(32 - prefix) addresses starting at the address with its host bits cleared.
    const block = 2 ** (32 - prefix);
    const first = Math.floor((ipv4ToNumber(address) ?? 0) / block) * block;
    return { first, last: first + block - 1 };
  });
  return (ip) => {
    const value = ipv4ToNumber(ip);
    return value !== null && ranges.some((range) => value >= range.first && value <= range.last);
  };
}
