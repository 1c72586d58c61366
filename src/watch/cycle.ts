/**
 * The security watch's step of each scan cycle (the scanner's `CycleWatch` hook): IP conflicts and
 * gateway changes, from the cycle's own discovery results. Its memory (WatchMemory) is written in
 * the cycle's transaction, so a failed cycle forgets nothing and reports nothing.
 */
import type { Logger } from 'pino';
import type { MemoryWrite, WatchStore } from '../store/watch.js';
import type { SubnetResult } from '../scanner/discovery.js';
import type { CycleWatch } from '../scanner/scanner.js';
import type { ScanSubnet } from '../scanner/subnets.js';
import { findConflicts, planConflicts } from './conflicts.js';
import { parseIpRoutes, planGateways, subnetGateway, type KernelRoute } from './gateway.js';
import { wholeSeconds, type WatchRunTool } from './tool.js';

/** `ip -j route` answers at once; a hung one must not hold the cycle. */
const routesTimeoutMs = 5000;

export interface CycleWatchOptions {
  readonly store: WatchStore;
  readonly runTool: WatchRunTool;
  readonly logger: Pick<Logger, 'warn'>;
}

export class SecurityCycleWatch implements CycleWatch {
  /** Each subnet's gateway for the running cycle, in SCAN_SUBNETS order. */
  private gateways: (string | undefined)[] = [];

  constructor(private readonly options: CycleWatchOptions) {}

  async prepare(subnets: readonly ScanSubnet[], signal: AbortSignal): Promise<void> {
    let routes: KernelRoute[] = [];
    if (subnets.some((subnet) => subnet.gateway === undefined)) {
      try {
        const result = await this.options.runTool('ip', ['-j', '-4', 'route', 'show'], {
          timeoutMs: routesTimeoutMs,
          signal,
        });
        routes = result.exitCode === 0 ? parseIpRoutes(result.stdout) : [];
      } catch (err) {
        // Without routes only configured gateways are watched this cycle; presence goes on.
        this.options.logger.warn(
          { event: 'watch-routes-failed', error: err instanceof Error ? err.message : String(err) },
          'the kernel routes could not be read; gateways from routes are not watched this cycle',
        );
      }
    }
    this.gateways = subnets.map((subnet) => subnetGateway(subnet, routes));
  }

  async plan(
    results: readonly SubnetResult[],
    now: Date,
  ): Promise<{ events: ReturnType<typeof planConflicts>['events']; memory: MemoryWrite[] }> {
    const at = wholeSeconds(now);
    const { store } = this.options;
    const conflicts = planConflicts(findConflicts(results), await store.memory('conflict'), at);
    const gateways = planGateways(this.gateways, results, await store.memory('gateway'), at);
    return {
      events: [...conflicts.events, ...gateways.events],
      memory: [
        ...[...conflicts.memory].map(([key, value]) => ({ kind: 'conflict' as const, key, value })),
        ...[...gateways.memory].map(([key, value]) => ({ kind: 'gateway' as const, key, value })),
      ],
    };
  }
}
