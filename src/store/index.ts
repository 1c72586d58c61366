/**
 * The one gate to the tables: every read and write of Devices, Events, Sessions, the
 * history counts, DeviceMacs, DevicePorts, WatchMemory, ScanState and the alert outbox goes through
 * a `Store`, split into narrow parts that each feature receives alone. No feature holds a database
 * handle or writes SQL (test/architecture.test.ts checks it). The interfaces are storage-neutral
 * (Date values, JSON shapes); `sqlite/` implements them on the embedded database.
 */
import { join } from 'node:path';
import type { Config } from '../config.js';
import { openDatabase } from '../db/connection.js';
import type { BackupStore } from './backup.js';
import type { CompatStore } from './compat.js';
import type { DeviceStore } from './devices.js';
import type { EventLogStore } from './event-log.js';
import type { AlertOutboxStore } from './outbox.js';
import type { PresenceStore } from './presence.js';
import type { DeviceReadouts } from './readouts.js';
import type { WatchStore } from './watch.js';
import { sqliteStore } from './sqlite/store.js';

export interface Store {
  /** Device CRUD, lists, views, counts, MACs and names (the API's and the caches' part). */
  readonly devices: DeviceStore;
  /** The scanner's part: presence state, a cycle's writes, history retention. */
  readonly presence: PresenceStore;
  readonly watch: WatchStore;
  readonly eventLog: EventLogStore;
  readonly compat: CompatStore;
  readonly outbox: AlertOutboxStore;
  readonly readouts: DeviceReadouts;
  readonly backup: BackupStore;
  /** Whether the store can answer (GET /health). */
  isOpen(): boolean;
  /** Closes the store; call once every feature has stopped. */
  close(): Promise<void>;
}

/** Opens the store the configuration names: SQLite at $DATA_DIR/netkeep.db. */
export function openStore(config: Pick<Config, 'DATA_DIR'>): Store {
  return sqliteStore(openDatabase(join(config.DATA_DIR, 'netkeep.db')));
}
