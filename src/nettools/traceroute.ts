/**
 * traceroute to one IPv4 or IPv6 address literal. Arguments:
 *   -n            numeric output: no reverse DNS lookup per hop. Lookups would go to the system
 *                 resolver (which DNS_SERVER cannot redirect for traceroute), add seconds per hop
 *                 and make the output depend on a third party; addresses are what a user needs.
 *   -m <hops>     TRACEROUTE_MAX_HOPS, bounded hops.
 *   -w <seconds>  at most 3 s of waiting for each probe, bounded waits.
 *   -6            for an IPv6 target.
 */
import { DomainError } from '../errors.js';
import { ipVersion, mappedIpv4Hint } from '../validation.js';
import type { ToolRunner } from './runner.js';

export interface TracerouteOptions {
  readonly maxHops: number;
  readonly timeoutMs: number;
  /** Each output line as it arrives (live progress). */
  readonly onLine?: (line: string) => void;
}

/** Seconds traceroute waits for each probe's answer. */
const probeWaitSeconds = 3;

/** The argument array for a validated address literal; an `invalid` outcome naming the field otherwise. */
export function tracerouteArgs(address: string, maxHops: number): string[] {
  const version = ipVersion(address);
  if (version === null) {
    throw new DomainError(
      'invalid',
      `Invalid field 'devLastIP': expected one IPv4 or IPv6 address (no hostname, range or leading zeros).${mappedIpv4Hint(address)}`,
      { code: 'INVALID_ADDRESS' },
    );
  }
  return [
    ...(version === 6 ? ['-6'] : []),
    '-n',
    '-m',
    String(maxHops),
    '-w',
    String(probeWaitSeconds),
    address,
  ];
}

export async function traceroute(
  runner: ToolRunner,
  address: string,
  options: TracerouteOptions,
  signal?: AbortSignal,
): Promise<{ success: true; output: string }> {
  const args = tracerouteArgs(address, options.maxHops);
  const result = await runner.run({
    tool: 'traceroute',
    args,
    timeoutMs: options.timeoutMs,
    signal,
    onLine: options.onLine,
  });
  return { success: true, output: result.stdout.replace(/\s+$/, '') };
}
