/**
 * Shared scaffolding of the property tests that replay writes on a real database file
 * (test/devices/counts.property.test.ts, totals.property.test.ts): a fresh file per run, opened
 * twice (the service's connection and another one, as the sqlite3 CLI or an import would write),
 * and a scan cycle in which the given MACs answer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import type { Observation } from '../../src/scanner/discovery.js';
import { mapAliases } from '../../src/scanner/macs.js';
import { planCycle } from '../../src/scanner/state-machine.js';
import type { ScanStore } from './scan-store.js';

/** Opens a fresh database file, twice, for one run of a property; closes and removes it after. */
export type FreshDatabase = (use: (db: Database, other: Database) => Promise<void>) => Promise<void>;

/** Calls `body` with a source of fresh database files in a temporary folder removed afterwards. */
export async function withDatabaseFiles(
  prefix: string,
  body: (fresh: FreshDatabase) => Promise<void>,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  let run = 0;
  try {
    await body(async (use) => {
      const file = join(dir, `run-${run++}.db`);
      const db = openDatabase(file);
      const other = openDatabase(file);
      try {
        await use(db, other);
      } finally {
        other.close();
        db.close();
        for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
      }
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An address of the MAC's own (its last byte), the same in every cycle. */
export const stableIp = (mac: string): string => `10.0.1.${String(parseInt(mac.slice(-2), 16))}`;

/**
 * One scan cycle at `now` in which exactly `present` answer (one miss makes a device absent), at
 * `ipOf` (by default their place in the list).
 */
export function scanCycle(
  store: ScanStore,
  present: readonly string[],
  now: Date,
  aliases: ReadonlyMap<string, string> = new Map(),
  ipOf: (mac: string, i: number) => string = (_mac, i) => `10.0.0.${i + 1}`,
): void {
  const seen = new Map<string, Observation>(
    present.map((m, i) => [m, { ips: [ipOf(m, i)], vendor: '', source: 'arp-scan' }]),
  );
  // Sightings of an alias are its device's (the scanner's alias step).
  const observations = mapAliases(seen, aliases).observations;
  store.apply(planCycle({ known: store.loadState(), observations, missesBeforeAbsent: 1, now }));
}
