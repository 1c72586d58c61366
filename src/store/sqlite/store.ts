/**
 * The SQLite store: every part over one connection, sharing one device engine (its change
 * tracking and group commit).
 */
import type { Database } from 'better-sqlite3';
import { WalCheckpointer } from '../../db/wal-checkpointer.js';
import type { Store } from '../index.js';
import type { StoreLog } from '../postgres/pool.js';
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
  /** Copies the WAL into the database file off the event loop; undefined for `:memory:`. */
  readonly checkpointer: WalCheckpointer | undefined;
}

/**
 * The store over an open SQLite connection; closing the store closes it. One per connection: the
 * device engine registers the connection's change tracking.
 */
export function sqliteStore(db: Database, log?: StoreLog): SqliteStore {
  const core = new SqliteDevices(db);
  const checkpointer = db.memory
    ? undefined
    : new WalCheckpointer(db, {
        writes: core.commits,
        onFallback: (error) =>
          log?.warn(
            { err: error },
            'the WAL checkpoint worker failed; the database connection checkpoints on the event loop again',
          ),
      });
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
    checkpointer,
    readouts: new SqliteReadouts(db),
    backup: new SqliteBackupStore(db),
    isOpen: () => db.open,
    health: () => Promise.resolve(db.open ? 'ok' : 'closed'),
    close: async () => {
      await checkpointer?.close();
      if (db.open) db.close();
    },
  };
}
