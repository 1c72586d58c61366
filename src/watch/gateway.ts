/**
 * Gateway Changed, as pure logic. The gateway of a subnet is the address given
 * as the third part of its SCAN_SUBNETS entry, or else the next hop of a kernel route through the
 * subnet's interface that lies inside the subnet (`ip -j route`; the default route first). The MAC
 * that answered for it is remembered (WatchMemory kind `gateway`, key the address); when another
 * MAC answers, the event is on the device of the MAC that answers now: "<ip> was <old mac>".
 */
import type { PlannedEvent } from '../devices/presence.js';
import type { SubnetResult } from '../scanner/discovery.js';
import { inSubnet, type ScanSubnet } from '../scanner/subnets.js';
import { ipVersion } from '../validation.js';

/** One route of `ip -j route`, reduced to what the watch needs. */
export interface KernelRoute {
  readonly dst: string;
  readonly gateway: string;
  readonly dev: string;
}

/**
 * Parses `ip -j route` output. Anything that is not an array of objects with a string `dst`, an
 * IPv4 `gateway` and a string `dev` is skipped: a route without a next hop has no gateway.
 */
export function parseIpRoutes(json: string): KernelRoute[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const routes: KernelRoute[] = [];
  for (const item of parsed as unknown[]) {
    if (typeof item !== 'object' || item === null) continue;
    const { dst, gateway, dev } = item as Record<string, unknown>;
    if (typeof dst !== 'string' || typeof dev !== 'string' || typeof gateway !== 'string') continue;
    if (ipVersion(gateway) !== 4) continue;
    routes.push({ dst, gateway, dev });
  }
  return routes;
}

/** The subnet's gateway: configured, else from the routes (default route first); undefined if none. */
export function subnetGateway(subnet: ScanSubnet, routes: readonly KernelRoute[]): string | undefined {
  if (subnet.gateway !== undefined) return subnet.gateway;
  const candidates = routes.filter((r) => r.dev === subnet.iface && inSubnet(r.gateway, subnet.cidr));
  return (candidates.find((r) => r.dst === 'default') ?? candidates[0])?.gateway;
}

export interface GatewayPlan {
  readonly events: PlannedEvent[];
  /** WatchMemory changes: gateway address -> MAC. */
  readonly memory: Map<string, string>;
}

/**
 * Compares who answered for each subnet's gateway with the remembered MAC. No answer: nothing
 * changes (a gateway that is down is not a new gateway). Several MACs (an IP conflict, reported as
 * such): the remembered one, when among them, is kept. First sighting: remembered, no event.
 */
export function planGateways(
  /** Each subnet's gateway, in SCAN_SUBNETS order (as `results`); undefined when it has none. */
  gateways: readonly (string | undefined)[],
  results: readonly SubnetResult[],
  remembered: ReadonlyMap<string, string>,
  now: Date,
): GatewayPlan {
  const events: PlannedEvent[] = [];
  const memory = new Map<string, string>();
  const done = new Set<string>();
  results.forEach((result, index) => {
    const gateway = gateways[index];
    if (gateway === undefined || done.has(gateway)) return;
    const macs = [...new Set(result.sightings.filter((s) => s.ip === gateway).map((s) => s.mac))].sort();
    const [first] = macs;
    if (first === undefined) return;
    done.add(gateway);
    const old = remembered.get(gateway);
    if (old !== undefined && macs.includes(old)) return;
    memory.set(gateway, first);
    if (old === undefined) return;
    events.push({
      mac: first,
      ip: gateway,
      type: 'Gateway Changed',
      dateTime: now,
      additionalInfo: `${gateway} was ${old}`,
      pendingAlert: 1,
    });
  });
  return { events, memory };
}
