/**
 * One device, many MACs, on the scanner's side (docs/random-macs.md), as pure logic: the alias
 * mapping (a sighting of an alias is a sighting of its device) and the automatic linking rule (a
 * random MAC new to the scan that DHCP shows to be a known device). Both run in the cycle's
 * synchronous load-plan-apply step, before the state machine plans; the device store writes what
 * they decide (DeviceMacs rows, `MAC Linked` events) in the cycle's transaction.
 */
import type { AliasReason, MacLink } from '../devices/presence.js';
import { isRandomMac } from '../validation.js';
import { sortedIps, type Observation } from './discovery.js';

/** One cycle's observations keyed by devMac, and the aliases that were seen. */
export interface MappedObservations {
  readonly observations: Map<string, Observation>;
  readonly aliasesSeen: string[];
}

/**
 * The observations with every alias replaced by its device: a device seen under two of its MACs
 * is one observation with the addresses of both (the state machine then picks one IP as for any
 * MAC answering for several). The vendor and source of the device's own MAC win when it was seen.
 */
export function mapAliases(
  observations: ReadonlyMap<string, Observation>,
  aliases: ReadonlyMap<string, string>,
): MappedObservations {
  if (aliases.size === 0) return { observations: new Map(observations), aliasesSeen: [] };
  const mapped = new Map<string, Observation>();
  const aliasesSeen: string[] = [];
  // Own MACs first, so that their vendor and source are the ones kept.
  const ordered = [...observations].sort(([a], [b]) => Number(aliases.has(a)) - Number(aliases.has(b)));
  for (const [mac, observation] of ordered) {
    const devMac = aliases.get(mac) ?? mac;
    if (devMac !== mac) aliasesSeen.push(mac);
    const held = mapped.get(devMac);
    mapped.set(devMac, held === undefined ? observation : mergedObservation(held, observation));
  }
  return { observations: mapped, aliasesSeen };
}

/** Two MACs of one device seen in one cycle: one observation (the first one's vendor and source). */
function mergedObservation(held: Observation, other: Observation): Observation {
  const ipv6 = [...new Set([...(held.ipv6 ?? []), ...(other.ipv6 ?? [])])].sort();
  return {
    ips: sortedIps([...held.ips, ...other.ips]),
    ...(ipv6.length === 0 ? {} : { ipv6 }),
    vendor: held.vendor === '' ? other.vendor : held.vendor,
    source: held.source,
  };
}

/** What DHCP says of a MAC: its lease's client identifier and host name ('' when none). */
export interface DhcpIdentity {
  readonly clientId: string;
  readonly hostname: string;
}

/** A stored device as the linking rule sees it. */
export interface LinkableDevice {
  readonly devMac: string;
  /** Every MAC of the device, its own first. */
  readonly macs: readonly string[];
  /** devName when devNameSource is `dhcp`, else ''. */
  readonly dhcpName: string;
  /** devName, whatever its source (a hostname carried by another device blocks the hostname rule). */
  readonly name: string;
  /** Seen this cycle under one of its MACs. */
  readonly seen: boolean;
}

export interface LinkInput {
  /** MACs seen this cycle that are neither a device nor an alias. */
  readonly newMacs: readonly string[];
  /** The DHCP identity of MACs (this cycle's leases, and client ids remembered from earlier ones). */
  readonly dhcp: ReadonlyMap<string, DhcpIdentity>;
  readonly devices: readonly LinkableDevice[];
}

export type LinkDecision = Omit<MacLink, 'dateTime'>;

const sameName = (a: string, b: string): boolean => a !== '' && a.toLowerCase() === b.toLowerCase();

/**
 * The links a cycle makes. A new MAC is linked only when it is random and exactly one device
 * qualifies:
 * - `dhcp-client-id`: its DHCP client identifier is that of one of the device's MACs;
 * - `dhcp-hostname`: its DHCP host name equals the device's DHCP-sourced name, no other device
 *   carries that name, every MAC of the device is random, and the device was not seen this cycle
 *   (it rotated away). Two new MACs claiming the same device by host name link neither.
 */
export function planLinks(input: LinkInput): LinkDecision[] {
  const byClientId = new Map<string, Set<string>>();
  for (const device of input.devices)
    for (const mac of device.macs) {
      const clientId = input.dhcp.get(mac)?.clientId ?? '';
      if (clientId === '') continue;
      const owners = byClientId.get(clientId) ?? new Set<string>();
      owners.add(device.devMac);
      byClientId.set(clientId, owners);
    }
  // Devices by name (lower case), so that each new MAC costs one lookup, not a pass over all.
  const byName = new Map<string, LinkableDevice[]>();
  for (const device of input.devices) {
    if (device.name === '') continue;
    const key = device.name.toLowerCase();
    const named = byName.get(key);
    if (named === undefined) byName.set(key, [device]);
    else named.push(device);
  }
  const links: LinkDecision[] = [];
  const byHostname = new Map<string, LinkDecision[]>();
  for (const mac of input.newMacs) {
    if (!isRandomMac(mac)) continue;
    const identity = input.dhcp.get(mac);
    if (identity === undefined) continue;
    const owners = identity.clientId === '' ? undefined : byClientId.get(identity.clientId);
    if (owners !== undefined) {
      const [owner] = owners;
      if (owners.size === 1 && owner !== undefined)
        links.push({ mac, devMac: owner, reason: 'dhcp-client-id' });
      continue;
    }
    const named = identity.hostname === '' ? [] : (byName.get(identity.hostname.toLowerCase()) ?? []);
    const [device] = named;
    if (
      named.length !== 1 ||
      device === undefined ||
      !sameName(identity.hostname, device.dhcpName) ||
      device.seen ||
      !device.macs.every(isRandomMac)
    )
      continue;
    const claims = byHostname.get(device.devMac) ?? [];
    claims.push({ mac, devMac: device.devMac, reason: 'dhcp-hostname' });
    byHostname.set(device.devMac, claims);
  }
  for (const claims of byHostname.values()) if (claims.length === 1 && claims[0]) links.push(claims[0]);
  return links;
}

/** `reason` of a link as stored and shown (eve_AdditionalInfo of its `MAC Linked` event). */
export function linkInfo(link: { readonly mac: string; readonly reason: AliasReason }): string {
  return `${link.mac} (${link.reason})`;
}

/** What the alias and linking step needs of the device store. */
export interface MacStepStore {
  loadAliases(): Promise<Map<string, string>>;
  loadNames(): Promise<Map<string, { readonly name: string; readonly source: string }>>;
}

/** One cycle's observations after the aliases and links, and what the cycle writes for them. */
export interface MacStepResult {
  readonly observations: Map<string, Observation>;
  readonly links: readonly MacLink[];
  readonly aliasesSeen: readonly string[];
}

/**
 * The scanner's alias and linking step. It remembers the client identifier of every MAC the
 * leases have shown (a DHCP server replaces a client's lease when it comes back under a new MAC
 * with the same client identifier, so the old MAC's lease is gone by the time the new one is seen);
 * that memory is lost on restart (docs/random-macs.md).
 */
export class MacStep {
  private readonly clientIds = new Map<string, string>();

  constructor(
    private readonly store: MacStepStore,
    private readonly linking: boolean,
  ) {}

  /**
   * The devices a new MAC could be linked to (the rule only ever looks at those): one of whose
   * MACs has the client identifier of a new MAC, or whose name is the host name of one. The names
   * are read only when a new MAC sent a host name.
   */
  private async candidates(
    newMacs: readonly string[],
    dhcp: ReadonlyMap<string, DhcpIdentity>,
    known: ReadonlySet<string>,
    aliases: ReadonlyMap<string, string>,
    seen: ReadonlyMap<string, Observation>,
  ): Promise<LinkableDevice[]> {
    const clientIds = new Set<string>();
    const hostnames = new Set<string>();
    for (const mac of newMacs) {
      const identity = dhcp.get(mac);
      if (identity?.clientId) clientIds.add(identity.clientId);
      if (identity?.hostname) hostnames.add(identity.hostname.toLowerCase());
    }
    const candidates = new Set<string>();
    for (const [mac, identity] of dhcp) {
      if (identity.clientId === '' || !clientIds.has(identity.clientId)) continue;
      const devMac = aliases.get(mac) ?? (known.has(mac) ? mac : undefined);
      if (devMac !== undefined) candidates.add(devMac);
    }
    const names =
      hostnames.size > 0 ? await this.store.loadNames() : new Map<string, { name: string; source: string }>();
    for (const [devMac, n] of names) if (hostnames.has(n.name.toLowerCase())) candidates.add(devMac);
    return linkableDevices(candidates, names, aliases, seen);
  }

  /**
   * Maps the observations through the aliases and, with linking on and DHCP identities given,
   * links the random MACs new to the scan. `known` is every device (keyed by devMac).
   */
  async run(
    observations: ReadonlyMap<string, Observation>,
    known: ReadonlySet<string>,
    leases: ReadonlyMap<string, DhcpIdentity> | undefined,
    now: Date,
  ): Promise<MacStepResult> {
    const aliases = await this.store.loadAliases();
    const mapped = mapAliases(observations, aliases);
    const links: MacLink[] = [];
    if (this.linking && leases !== undefined) {
      for (const [mac, lease] of leases) if (lease.clientId !== '') this.clientIds.set(mac, lease.clientId);
      const newMacs = [...mapped.observations.keys()].filter(
        (mac) => !known.has(mac) && isRandomMac(mac) && leases.has(mac),
      );
      if (newMacs.length > 0) {
        const dhcp = new Map<string, DhcpIdentity>();
        for (const [mac, clientId] of this.clientIds) dhcp.set(mac, { clientId, hostname: '' });
        for (const [mac, lease] of leases) dhcp.set(mac, lease);
        for (const decision of planLinks({
          newMacs,
          dhcp,
          devices: await this.candidates(newMacs, dhcp, known, aliases, mapped.observations),
        }))
          links.push({ ...decision, dateTime: now });
      }
    }
    if (links.length === 0) return { ...mapped, links };
    // A linked MAC is a sighting of its device, as an alias is.
    const linkedAliases = new Map(aliases);
    for (const link of links) linkedAliases.set(link.mac, link.devMac);
    const relinked = mapAliases(mapped.observations, linkedAliases);
    return { observations: relinked.observations, aliasesSeen: mapped.aliasesSeen, links };
  }
}

function linkableDevices(
  candidates: ReadonlySet<string>,
  names: ReadonlyMap<string, { readonly name: string; readonly source: string }>,
  aliases: ReadonlyMap<string, string>,
  seen: ReadonlyMap<string, Observation>,
): LinkableDevice[] {
  const macs = new Map<string, string[]>();
  for (const devMac of candidates) macs.set(devMac, [devMac]);
  for (const [alias, devMac] of aliases) macs.get(devMac)?.push(alias);
  return [...candidates].map((devMac) => {
    const n = names.get(devMac);
    const name = n === undefined || n.name === '(unknown)' ? '' : n.name;
    return {
      devMac,
      macs: macs.get(devMac) ?? [devMac],
      dhcpName: n?.source === 'dhcp' ? name : '',
      name,
      seen: seen.has(devMac),
    };
  });
}
