/**
 * The scanner's side of the device store: reads the previous state of every device, applies a
 * cycle's plan in one transaction (a crash leaves either the whole cycle or none of it), and
 * prunes old history in small batches. It writes nothing itself: the device store owns the
 * Devices, Events, Sessions and ScanState tables, and this module only decides when to call it.
 */
import { setImmediate } from 'node:timers/promises';
import type { PruneResult } from '../store/devices.js';
import type { PresenceStore } from '../store/presence.js';
import type { KnownDevice } from '../devices/presence.js';
import type { ApplyHooks } from '../store/devices.js';
import type { ScanPlan } from './state-machine.js';

export type { ApplyHooks, PruneResult } from '../store/devices.js';

export interface PruneOptions {
  /** Rows deleted per statement; the event loop gets a turn between batches. Default 1000. */
  readonly batchSize?: number;
}

export class ScanStore {
  constructor(private readonly devices: PresenceStore) {}

  /**
   * The previous state of every device, in one query; with `toggleSince` (the start of the flap
   * window), each device's recent Connected/Disconnected/Device Down/Down Reconnected events counted.
   */
  loadState(toggleSince: Date | null = null): Map<string, KnownDevice> {
    return this.devices.loadPresence(toggleSince);
  }

  /** Applies a plan in one transaction: all of it or, on any error, none of it. */
  apply(plan: ScanPlan, hooks: ApplyHooks = {}): void {
    this.devices.applyPresence(plan, hooks);
  }

  /**
   * Deletes events, and closed sessions, older than `days` days before `now`; open sessions are
   * kept whatever their age. Works in batches and yields to the event loop between them, so a
   * huge first prune does not stall HTTP requests.
   */
  async pruneHistory(days: number, now: Date, options: PruneOptions = {}): Promise<PruneResult> {
    // 1,000 rows keep each pause of the event loop near 10 ms on this hardware (5,000 took ~60 ms
    // and dragged device GETs to p50 125 ms during a first prune of a two-year-old database).
    const batchSize = options.batchSize ?? 1000;
    const before = new Date(now.getTime() - days * 86_400_000);
    let events = 0;
    let sessions = 0;
    for (;;) {
      const batch = this.devices.pruneHistory(before, batchSize);
      events += batch.events;
      sessions += batch.sessions;
      if (batch.events < batchSize && batch.sessions < batchSize) break;
      await setImmediate();
    }
    // Device deletes through the API drop their scan memory in the same transaction; this catches
    // rows of devices deleted some other way (another process, the sqlite3 CLI).
    this.devices.pruneScanMemory();
    return { events, sessions };
  }
}
