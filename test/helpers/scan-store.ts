/**
 * The scanner's cycle on the SQLite engine, synchronously, for tests and benches that drive cycles
 * by hand: load the presence state, apply a plan with its extras (watch memory, notifications) in
 * one transaction, prune history. Production code calls the presence store (src/store/presence.ts).
 */
import type { KnownDevice } from '../../src/devices/presence.js';
import { pruneHistory, type PruneOptions, type PruneResult } from '../../src/scanner/store.js';
import type { ScanPlan } from '../../src/scanner/state-machine.js';
import type { PresenceExtras } from '../../src/store/presence.js';
import { applyCycle, SqliteDeviceStore, type CycleParts } from '../../src/store/sqlite/device-store.js';
import type { Database } from 'better-sqlite3';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';

export class ScanStore {
  constructor(
    readonly core: SqliteDevices,
    private readonly parts: CycleParts = {},
  ) {}

  loadState(toggleSince: Date | null = null): Map<string, KnownDevice> {
    return this.core.presence.load(toggleSince);
  }

  apply(plan: ScanPlan, extras: PresenceExtras = {}): void {
    applyCycle(this.core, this.parts, plan, extras);
  }

  pruneHistory(days: number, now: Date, options: PruneOptions = {}): Promise<PruneResult> {
    return pruneHistory(new SqliteDeviceStore(this.core), days, now, options);
  }
}

/** The scanner's two parts of the store over one SQLite connection (one device engine). */
export function storesOf(db: Database): { devices: SqliteDeviceStore; presence: SqliteDeviceStore } {
  const store = new SqliteDeviceStore(new SqliteDevices(db));
  return { devices: store, presence: store };
}
