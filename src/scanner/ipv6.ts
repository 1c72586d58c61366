/**
 * IPv6 neighbours (SCAN_IPV6): after a subnet's discovery, one echo to the all-nodes address on its
 * interface (`ping -6 -c 2 -I <if> ff02::1`) makes every IPv6 host of the link answer, and the
 * kernel's neighbour table of that interface (`ip -j -6 neigh show dev <if>`) then names them by
 * MAC. Both commands go through the injected RunTool (the shared tool runner: argument arrays, no
 * shell, time limits). Parsing is pure and tested with captured output.
 *
 * - A MAC is sighted when one of its entries answered. The echo goes to link-local addresses and
 *   ping prints the source of every reply, so a link-local entry counts when its address replied
 *   to this echo (its state alone could be a leftover: REACHABLE or DELAY outlive a host that left
 *   seconds ago). A global or unique-local entry (learned from the host's own traffic; the echo
 *   does not test it) counts by its state: REACHABLE, DELAY or PROBE, not STALE, FAILED or
 *   INCOMPLETE. The kernel does not always keep an entry for a link-local address that replied
 *   (e.g. a host it knows by its unique-local address), hence both. An entry stays REACHABLE for
 *   15-45 s after its last confirmation: a host known by such an address that left less than that
 *   before a cycle is seen once more. A MAC's addresses are those of all its entries that hold one.
 * - An interface without IPv6 (no address, disabled) gets no reply to the echo, not even its own
 *   (ping exits 1): that interface is skipped, which is no cycle error; its IPv6-only devices are
 *   then out of the cycle's scope (not judged), as they would be with SCAN_IPV6=off.
 */
import ipaddr from 'ipaddr.js';
import { ipVersion, normalizeMac } from '../validation.js';
import type { RunTool } from './discovery.js';

/** The MACs that answered on one interface, each with its addresses (sorted, unique). */
export interface Ipv6Neighbour {
  readonly mac: string;
  readonly addresses: readonly string[];
}

export interface Ipv6Result {
  /** False when the interface has no IPv6 (the echo or the read failed): nothing was learned. */
  readonly read: boolean;
  readonly neighbours: readonly Ipv6Neighbour[];
  /** The /64 prefixes of every address in the interface's table (the cycle's IPv6 scope). */
  readonly prefixes: readonly string[];
}

const answered = new Set(['REACHABLE', 'DELAY', 'PROBE']);
/** States that never count, whatever replied: the MAC is unknown or unconfirmed. */
const unresolved = new Set(['FAILED', 'INCOMPLETE']);

export function ipv6EchoArgs(iface: string): string[] {
  return ['-6', '-c', '2', '-I', iface, 'ff02::1'];
}

export function ipv6NeighbourArgs(iface: string): string[] {
  return ['-j', '-6', 'neigh', 'show', 'dev', iface];
}

/** The /64 of an IPv6 address as text, e.g. `fd00:1:2:3::/64`. */
export function prefix64(address: string): string {
  const parts = ipaddr.IPv6.parse(address.split('%')[0] ?? '').parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
}

interface NeighbourEntry {
  readonly dst?: unknown;
  readonly lladdr?: unknown;
  readonly state?: unknown;
}

/** The source addresses of the replies in ping's output (`64 bytes from fe80::1%eth0: ...`), canonical. */
export function parseEchoReplies(stdout: string): Set<string> {
  const replies = new Set<string>();
  for (const match of stdout.matchAll(/^\d+ bytes from ([0-9A-Fa-f:.]+)(?:%[^:\s]+)?: /gm)) {
    const address = match[1] ?? '';
    if (ipVersion(address) === 6) replies.add(ipaddr.IPv6.parse(address).toString());
  }
  return replies;
}

/**
 * Parses `ip -j -6 neigh show dev <if>`; `replies` are the addresses that answered the echo.
 * Entries that are not an IPv6 address with a MAC are skipped.
 */
export function parseIpv6Neighbours(
  stdout: string,
  replies: ReadonlySet<string>,
): { neighbours: Ipv6Neighbour[]; prefixes: string[] } {
  const text = stdout.trim();
  const entries: unknown = text === '' ? [] : JSON.parse(text);
  if (!Array.isArray(entries)) throw new Error('ip -j neigh printed something that is not a JSON array');
  const addresses = new Map<string, Set<string>>();
  const sighted = new Set<string>();
  const prefixes = new Set<string>();
  for (const entry of entries as NeighbourEntry[]) {
    const dst = typeof entry.dst === 'string' ? entry.dst : '';
    if (ipVersion(dst) !== 6) continue;
    prefixes.add(prefix64(dst));
    const mac = normalizeMac(typeof entry.lladdr === 'string' ? entry.lladdr : '');
    if (mac === null) continue;
    const address = ipaddr.IPv6.parse(dst).toString();
    const states: unknown[] = Array.isArray(entry.state) ? entry.state : [];
    const has = (set: ReadonlySet<string>): boolean =>
      states.some((s) => typeof s === 'string' && set.has(s));
    const linkLocal = ipaddr.IPv6.parse(address).range() === 'linkLocal';
    if (!has(unresolved) && (replies.has(address) || (!linkLocal && has(answered)))) sighted.add(mac);
    const set = addresses.get(mac) ?? new Set<string>();
    set.add(address);
    addresses.set(mac, set);
  }
  const neighbours = [...sighted]
    .sort()
    .map((mac) => ({ mac, addresses: [...(addresses.get(mac) ?? [])].sort() }));
  return { neighbours, prefixes: [...prefixes].sort() };
}

/** Global unicast, else unique-local, else link-local: the address a device is known by; '' if none. */
export function primaryIpv6(addresses: readonly string[]): string {
  const ranked = addresses
    .filter((a) => ipVersion(a) === 6)
    .map((a) => ({ a, range: ipaddr.IPv6.parse(a).range() }))
    .map(({ a, range }) => ({
      a,
      rank: range === 'unicast' ? 0 : range === 'uniqueLocal' ? 1 : range === 'linkLocal' ? 2 : 3,
    }))
    .filter((x) => x.rank < 3)
    .sort((x, y) => x.rank - y.rank || (x.a < y.a ? -1 : x.a > y.a ? 1 : 0));
  return ranked[0]?.a ?? '';
}

export interface Ipv6Options {
  readonly runTool: RunTool;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/**
 * The echo, then the table read, on one interface. Never throws for an interface without IPv6
 * (`read: false`); an abort (shutdown) is passed on.
 */
export async function discoverIpv6(iface: string, options: Ipv6Options): Promise<Ipv6Result> {
  const none: Ipv6Result = { read: false, neighbours: [], prefixes: [] };
  const run = { timeoutMs: options.timeoutMs, signal: options.signal };
  try {
    // The interface answers its own echo: exit 1 (no reply at all) means it has no IPv6 (disabled,
    // no address), 2 another error. Either way nothing is learned about the link.
    const echo = await options.runTool('ping', ipv6EchoArgs(iface), run);
    if (echo.exitCode !== 0) return none;
    const table = await options.runTool('ip', ipv6NeighbourArgs(iface), run);
    if (table.exitCode !== 0) return none;
    return { read: true, ...parseIpv6Neighbours(table.stdout, parseEchoReplies(echo.stdout)) };
  } catch (err) {
    if (options.signal?.aborted === true) throw err;
    return none;
  }
}
