/**
 * The scanner's part of the store: every device's presence state in one read, a cycle's writes in
 * one transaction, history retention in batches. The vocabulary (KnownDevice, PresenceChanges) is
 * src/devices/presence.ts; the pure state machine plans, this store writes.
 */
import type { KnownDevice, PresenceChanges } from '../devices/presence.js';
import type { PruneResult } from './devices.js';
import type { NotifyRequest } from './outbox.js';
import type { MemoryWrite } from './watch.js';

/**
 * What commits with a cycle besides its presence changes, as data (a PostgreSQL store runs it in
 * its own transaction): the security watch's memory and the alert outbox's notifications.
 */
export interface PresenceExtras {
  /** WatchMemory keys set or forgotten. */
  readonly memory?: readonly MemoryWrite[];
  /** The notifications of the cycle's events, planned from the devices as the cycle leaves them. */
  readonly notify?: NotifyRequest;
  /** Test seam: called inside the transaction, after every write and before COMMIT (crash tests). */
  readonly testOnlyBeforeCommit?: () => void;
}

export interface PresenceStore {
  /**
   * Every device's presence state, in one query; with `toggleSince`, each device's events that
   * count towards flapping since then (recentToggles; 0 without it).
   */
  loadPresence(toggleSince?: Date | null): Promise<Map<string, KnownDevice>>;
  /**
   * Applies one scan cycle in one transaction: all of it or, on any error, none of it. New devices
   * are created like `create` creates them; the history rows are added; `extras` commit with it.
   * Durable when it settles.
   */
  applyPresence(changes: PresenceChanges, extras?: PresenceExtras): Promise<void>;
  /**
   * Deletes up to `limit` events, and up to `limit` closed sessions, older than `before`; open
   * sessions are kept whatever their age. Call again while either count equals `limit`.
   */
  pruneHistory(before: Date, limit: number): Promise<PruneResult>;
  /** Drops the scanner's memory of MACs that are no longer devices (deleted by another process). */
  pruneScanMemory(): Promise<void>;
}
