/**
 * The one gate to the tables: every read and write of Devices, Events, Sessions, the
 * history counts, DeviceMacs, DevicePorts, WatchMemory, ScanState, the alert outbox and the probes'
 * tables goes through
 * a `Store`, split into narrow parts that each feature receives alone. No feature holds a database
 * handle or writes SQL (test/architecture.test.ts checks it). The interfaces are storage-neutral
 * (Date values, JSON shapes); `sqlite/` implements them on the embedded database, `postgres/` on
 * PostgreSQL (DATABASE_URL), where several servers may share one database.
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
import type { ProbeStore } from './probes.js';
import type { StoreLog } from './postgres/pool.js';
import { openPostgresStore } from './postgres/store.js';
import type { ServerLink } from './servers.js';
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
  /** The probes' registry and their cycles' bookkeeping. */
  readonly probes: ProbeStore;
  /** Several servers on one database (PostgreSQL); undefined for a store only one server uses. */
  readonly servers?: ServerLink;
  /** Whether the store is open (not closed yet). */
  isOpen(): boolean;
  /**
   * Whether the store answers now (GET /health): `ok`, `down` (it cannot be reached; it comes
   * back by itself) or `closed`.
   */
  health(): Promise<'ok' | 'down' | 'closed'>;
  /** Closes the store; call once every feature has stopped. */
  close(): Promise<void>;
}

/** Opens the store the configuration names: SQLite at $DATA_DIR/netkeep.db, the SQLite store. */
export function openSqliteStore(config: Pick<Config, 'DATA_DIR'>, log?: StoreLog): Store {
  return sqliteStore(openDatabase(join(config.DATA_DIR, 'netkeep.db')), log);
}

/**
 * Opens the store the configuration names: PostgreSQL at DATABASE_URL (its schema brought up to
 * date), else SQLite at $DATA_DIR/netkeep.db. Rejects with STORE_UNAVAILABLE when PostgreSQL
 * cannot be reached at start.
 */
export async function openStore(
  config: Pick<Config, 'DATA_DIR'> & Partial<Pick<Config, 'DATABASE_URL'>>,
  log?: StoreLog,
): Promise<Store> {
  if (config.DATABASE_URL === undefined || config.DATABASE_URL === '') return openSqliteStore(config, log);
  return openPostgresStore(config.DATABASE_URL, log === undefined ? {} : { log });
}
