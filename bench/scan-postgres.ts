/**
 * The scan bench's PostgreSQL part (`npm run bench -- scan` runs it after the SQLite parts, on the
 * same seeded store): a private PostgreSQL with its durability on (fsync, synchronous commit), the
 * seeded SQLite store copied into it by `migrate-store`'s copy (its throughput is printed), then
 * the same measured cycle as part 1 (load state + plan + apply in one transaction, 5,000 devices
 * seen of 10,000, 1,000,000 events) on a fresh copy of that database each time
 * (CREATE DATABASE ... TEMPLATE). Target: a 5k-device cycle under 500 ms.
 *
 * GET /device, update-column and two servers on PostgreSQL: devices-postgres.ts
 * (`npm run bench -- devices --store postgres`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { planCycle } from '../src/scanner/state-machine.js';
import { copySqliteToPostgres } from '../src/store/postgres/copy.js';
import { openPostgres } from '../src/store/postgres/pool.js';
import { PostgresPresenceStore } from '../src/store/postgres/presence.js';
import { postgresMissing, startPostgres } from '../test/helpers/postgres.js';
import { median } from './lib.js';
import { observations, seedOnce } from './scan.js';

const cycles = 5;

/** Part 4: the measured cycle on PostgreSQL, from the same seeded store. */
export async function benchScanPostgres(seeded: string): Promise<void> {
  const missing = postgresMissing();
  if (missing !== undefined) {
    console.log(`scan cycle on PostgreSQL: not run: ${missing}`);
    return;
  }
  const server = await startPostgres({ durable: true });
  try {
    const seedUrl = await server.createDatabase('seed');
    const pool = await openPostgres(seedUrl);
    const source = new Database(seeded, { readonly: true });
    const copyStart = performance.now();
    const report = await copySqliteToPostgres(source, pool, { sourceId: seeded, batchSize: 5000 });
    const copyMs = performance.now() - copyStart;
    source.close();
    await pool.query('VACUUM ANALYZE');
    await pool.close();
    const rows = report.tables.reduce((n, t) => n + t.added, 0);
    console.log(
      `migrate-store: ${rows} rows copied in ${(copyMs / 1000).toFixed(1)} s (${Math.round(rows / (copyMs / 1000))} rows/s, ` +
        `history counts derived by the triggers${report.countMismatches.length === 0 ? ', equal to SQLite' : `, ${report.countMismatches.length} devices DIFFER`})`,
    );

    const totals: number[] = [];
    const loads: number[] = [];
    const applies: number[] = [];
    let counts = '';
    for (let c = 0; c < cycles; c++) {
      const name = `cycle_${c}`;
      const store = await openPostgres(await server.createDatabase(name, 'seed'));
      try {
        const presence = new PostgresPresenceStore(store);
        const now = new Date();
        const t0 = performance.now();
        const known = await presence.loadPresence(new Date(now.getTime() - 60 * 60_000));
        const t1 = performance.now();
        const plan = planCycle({ known, observations: observations(), missesBeforeAbsent: 1, now });
        const t2 = performance.now();
        await presence.applyPresence(plan);
        const t3 = performance.now();
        loads.push(t1 - t0);
        applies.push(t3 - t2);
        totals.push(t3 - t0);
        counts = JSON.stringify(plan.counts);
      } finally {
        await store.close();
        await server.dropDatabase(name);
      }
    }
    const ms = (v: number): string => `${v.toFixed(1)} ms`;
    console.log(`scan cycle on PostgreSQL: mix ${counts}`);
    console.log(
      `scan cycle on PostgreSQL: median ${ms(median(totals))} (load ${ms(median(loads))}, apply+commit ${ms(median(applies))}); ` +
        `min ${ms(Math.min(...totals))}, max ${ms(Math.max(...totals))} over ${cycles} cycles; ` +
        `target < 500 ms: ${median(totals) < 500 ? 'met' : 'MISSED'}`,
    );
  } finally {
    await server.stop();
  }
}

/** `node dist/bench/scan-postgres.js`: this part alone (seeds its own store). */
if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-bench-scan-pg-'));
  try {
    await benchScanPostgres(seedOnce(dir));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
