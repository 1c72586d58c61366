/**
 * The device counts on PostgreSQL (`DeviceStore.counts()` / `totals()`), kept in memory so that
 * reading them costs no scan. SQLite's store follows each device through its change reader; here
 * another server may write the same tables, so the rule is simpler:
 *
 * - the counts are recounted, in one aggregate query over Devices (its flags grouped: at most 32
 *   rows), when they are read after something may have changed them, and kept until then;
 * - "something may have changed" is any write this process made through the pool
 *   (`PostgresPool.onWrite`: the API's writes, a scan cycle, a merge, whatever wrote), and
 *   whatever `invalidate()` is told: the wiring calls it when another server's change message
 *   (or a resync after a lost LISTEN connection) arrives through NOTIFY (notify.ts);
 * - a recount that a change overtook (told while it ran) answers its callers but is not kept, so
 *   that a write committed meanwhile is never hidden behind an older count. Reads that come while
 *   one recount runs share it.
 *
 * Which counters a device is in is status.ts' `inCounter`, the rule SQLite's predicates
 * (sqlite/status-sql.ts) express in SQL; a test checks that they agree.
 */
import { deviceCounters, deviceGroups, inCounter, type CounterFlags } from '../../devices/status.js';
import type { DeviceCounts, DeviceTotals } from '../devices.js';
import type { PostgresPool } from './pool.js';

/** How many devices have each combination of the flags the counters read. */
export const countFlagsSql = `SELECT "devPresentLastScan", "devAlertDown", "devIsArchived", "devFavorite", "devIsNew",
    count(*) AS n
  FROM "Devices" GROUP BY 1, 2, 3, 4, 5`;

type FlagsRow = CounterFlags & { n: number };

export class PostgresDeviceCounts {
  /** Moves on with every change told; a count is kept only for the generation it was read in. */
  private generation = 0;
  private kept: { readonly generation: number; readonly counts: DeviceCounts } | undefined;
  private running: { readonly generation: number; readonly counts: Promise<DeviceCounts> } | undefined;
  private readonly unsubscribe: () => void;

  constructor(private readonly store: Pick<PostgresPool, 'query' | 'onWrite'>) {
    this.unsubscribe = store.onWrite(() => {
      this.invalidate();
    });
  }

  /** Something may have changed the devices (another server's change message, a resync). */
  invalidate(): void {
    this.generation++;
  }

  /** Every count of `deviceCounters`: kept, or recounted once after a change. */
  counts(): Promise<DeviceCounts> {
    const generation = this.generation;
    if (this.kept?.generation === generation) return Promise.resolve(this.kept.counts);
    if (this.running?.generation === generation) return this.running.counts;
    const counts = this.recount().then((result) => {
      if (this.generation === generation) this.kept = { generation, counts: result };
      return result;
    });
    const running = { generation, counts };
    this.running = running;
    const done = (): void => {
      if (this.running === running) this.running = undefined;
    };
    counts.then(done, done);
    return counts;
  }

  /** The status counters' groups, from the counts. */
  async totals(): Promise<DeviceTotals> {
    const counts = await this.counts();
    return Object.fromEntries(deviceGroups.map((group) => [group, counts[group]])) as DeviceTotals;
  }

  /** Stops following the pool's writes (the store is closing). */
  close(): void {
    this.unsubscribe();
  }

  private async recount(): Promise<DeviceCounts> {
    const rows = await this.store.query<FlagsRow>(countFlagsSql);
    const counts = Object.fromEntries(deviceCounters.map((counter) => [counter, 0])) as Record<
      (typeof deviceCounters)[number],
      number
    >;
    for (const row of rows)
      for (const counter of deviceCounters) if (inCounter(counter, row)) counts[counter] += row.n;
    return counts;
  }
}
