/**
 * The SQLite store: every part over one connection, sharing one device engine (its change
 * tracking and group commit).
 */
import type { Database } from 'better-sqlite3';
import type { Store } from '../index.js';
import { SqliteBackupStore } from './backup.js';
import { SqliteCompatStore } from './compat.js';
import { SqliteDeviceStore } from './device-store.js';
import { SqliteDevices } from './devices.js';
import { SqliteEventLog } from './event-log.js';
import { SqliteOutboxStore } from './outbox.js';
import { SqliteReadouts } from './readouts.js';
import { SqliteWatchStore } from './watch.js';
import { SqliteProbeStore } from './probes.js';

/** The store with its SQLite parts as they are (tests and benches reach the engine through it). */
export interface SqliteStore extends Store {
  readonly core: SqliteDevices;
  readonly devices: SqliteDeviceStore;
  readonly presence: SqliteDeviceStore;
  readonly watch: SqliteWatchStore;
  readonly outbox: SqliteOutboxStore;
  readonly compat: SqliteCompatStore;
  readonly probes: SqliteProbeStore;
}

/**
 * The store over an open SQLite connection; closing the store closes it. One per connection: the
 * device engine registers the connection's change tracking.
 */
export function sqliteStore(db: Database): SqliteStore {
  const core = new SqliteDevices(db);
  const outbox = new SqliteOutboxStore(db, core);
  const watch = new SqliteWatchStore(db, core, outbox);
  const probes = new SqliteProbeStore(db, outbox);
  const devices = new SqliteDeviceStore(core, { watch, outbox, probes });
  return {
    core,
    devices,
    presence: devices,
    watch,
    eventLog: new SqliteEventLog(db),
    compat: new SqliteCompatStore(db, core),
    outbox,
    probes,
    readouts: new SqliteReadouts(db),
    backup: new SqliteBackupStore(db),
    isOpen: () => db.open,
    health: () => Promise.resolve(db.open ? 'ok' : 'closed'),
    close: () => {
      if (db.open) db.close();
      return Promise.resolve();
    },
  };
}
