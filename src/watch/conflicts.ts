/**
 * IP Conflict, as pure logic: in one cycle one IPv4 address answered from two
 * or more MACs. One event per MAC involved; not repeated while the same conflict (the same address
 * and the same set of MACs) persists. The remembered conflicts are WatchMemory rows (kind
 * `conflict`, key the address, value the MACs joined by commas), written in the cycle's
 * transaction.
 */
import type { PlannedEvent } from '../devices/presence.js';
import type { SubnetResult } from '../scanner/discovery.js';

/** Every address answered from two or more MACs in this cycle: address -> MACs, sorted. */
export function findConflicts(results: readonly SubnetResult[]): Map<string, string[]> {
  const byIp = new Map<string, Set<string>>();
  for (const result of results)
    for (const sighting of result.sightings) {
      const macs = byIp.get(sighting.ip) ?? new Set<string>();
      macs.add(sighting.mac);
      byIp.set(sighting.ip, macs);
    }
  const conflicts = new Map<string, string[]>();
  for (const [ip, macs] of byIp) if (macs.size > 1) conflicts.set(ip, [...macs].sort());
  return conflicts;
}

export interface ConflictPlan {
  readonly events: PlannedEvent[];
  /** WatchMemory changes: address -> MACs text, or undefined to forget. */
  readonly memory: Map<string, string | undefined>;
}

/** Events for conflicts that are new (or whose MACs changed), and the memory that follows. */
export function planConflicts(
  current: ReadonlyMap<string, readonly string[]>,
  remembered: ReadonlyMap<string, string>,
  now: Date,
): ConflictPlan {
  const events: PlannedEvent[] = [];
  const memory = new Map<string, string | undefined>();
  for (const [ip, macs] of current) {
    const value = macs.join(',');
    if (remembered.get(ip) === value) continue;
    memory.set(ip, value);
    for (const mac of macs) {
      const others = macs.filter((other) => other !== mac);
      events.push({
        mac,
        ip,
        type: 'IP Conflict',
        dateTime: now,
        additionalInfo: `${ip} also answered by ${others.join(', ')}`,
        pendingAlert: 1,
      });
    }
  }
  for (const ip of remembered.keys()) if (!current.has(ip)) memory.set(ip, undefined);
  return { events, memory };
}
