/**
 * The reads and writes behind NetAlertX's endpoints (src/compat/routes.ts). Lists are read in pages
 * by key (never an open cursor across awaits), so a route can stream them. SQLite: sqlite/compat.ts.
 */
import type { DeviceRow } from '../devices/catalogue.js';
import type { EventJson } from '../devices/history.js';
import type { DeviceGroup, PresenceGroup } from '../devices/status.js';
import type { DeviceChanges } from './devices.js';

/** What NetAlertX's by-status lists: a counter group or a presence group (undefined: every device). */
export type ByStatusGroup = DeviceGroup | PresenceGroup;

export interface StatusItem {
  readonly id: string;
  readonly title: string;
  readonly favorite: number;
}

/** An Events row as NetAlertX lists it: the storage columns plus the pair rowid. */
export type CompatEvent = EventJson & { eve_PairEventRowid: number | null };

/**
 * Where the next page of events starts (exclusive): the last row of the previous page, as the store
 * gave it (opaque to callers).
 */
export interface EventCursor {
  readonly time: string;
  readonly type: string;
  readonly rowid: number;
}

/** `[events, sessions, missing, voided, new, down]` as NetAlertX's /sessions/totals answers. */
export type SessionTotals = [number, number, number, number, number, number];

/** One device of a CSV import: its MAC, the columns given, and a devGUID for a new device. */
export interface ImportedDevice {
  readonly mac: string;
  readonly changes: DeviceChanges;
  readonly guid: string | undefined;
}

export interface CompatStore {
  /** Up to `limit` devices of a status group (all when undefined) with devMac after `afterMac`, in MAC order. */
  byStatusAfter(group: ByStatusGroup | undefined, afterMac: string, limit: number): Promise<StatusItem[]>;
  /** Up to `limit` stored rows with devMac after `afterMac`, in MAC order. */
  devicesAfter(afterMac: string, limit: number): Promise<DeviceRow[]>;
  /** Up to `limit` events, newest first, after `cursor`; of one MAC or of all. */
  eventsAfter(
    mac: string | undefined,
    cursor: EventCursor | undefined,
    limit: number,
  ): Promise<{ events: CompatEvent[]; next: EventCursor | undefined }>;
  /** NetAlertX's session totals since `start` (null: all time). */
  sessionTotals(start: Date | null): Promise<SessionTotals>;
  /** Upserts every device in one durable write; existing devices get the given columns. */
  importDevices(
    devices: readonly ImportedDevice[],
    now: Date,
  ): Promise<{ inserted: string[]; updated: string[] }>;
}
