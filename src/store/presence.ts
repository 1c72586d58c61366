/**
 * The scanner's part of the store: every device's presence state in one read, a cycle's writes in
 * one transaction, history retention in batches. The vocabulary (KnownDevice, PresenceChanges) is
 * src/devices/presence.ts; the pure state machine plans, this store writes.
 */
import type { KnownDevice, PresenceChanges } from '../devices/presence.js';
import type { ApplyHooks, PruneResult } from './devices.js';

export interface PresenceStore {
  /**
   * Every device's presence state, in one query; with `toggleSince`, each device's events that
   * count towards flapping since then (recentToggles; 0 without it).
   */
  loadPresence(toggleSince?: Date | null): Map<string, KnownDevice>;
  /**
   * Applies one scan cycle in one transaction: all of it or, on any error, none of it. New devices
   * are created like `create` creates them; the history rows are added.
   */
  applyPresence(changes: PresenceChanges, hooks?: ApplyHooks): void;
  /**
   * Deletes up to `limit` events, and up to `limit` closed sessions, older than `before`; open
   * sessions are kept whatever their age. Call again while either count equals `limit`.
   */
  pruneHistory(before: Date, limit: number): PruneResult;
  /** Drops the scanner's memory of MACs that are no longer devices (deleted by another process). */
  pruneScanMemory(): void;
}
